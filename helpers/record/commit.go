package record

import (
	"os"
	"os/exec"
	"strings"
)

// CommitEnv names the project's commit for a copy of the tree without .git (as on the GPU machine).
const CommitEnv = "KERNELS_COMMIT"

// ProjectCommit is the project's commit that a result was made at: $KERNELS_COMMIT, else git's short
// HEAD, else "".
func ProjectCommit() string {
	if c := os.Getenv(CommitEnv); c != "" {
		return c
	}
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

package reduce

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
)

// profileEnv, set to a file name, makes the test binary act as the softmax notebook's Profile cell
// on the cluster step: it writes what ProfileTrial returns (the profile, as JSON) or its error to
// that file and exits. Its children under ncu are this binary again, with the same variable, so
// they reach the same call. The GPU test runs it in a process of its own.
const profileEnv = "REDUCE_TEST_PROFILE"

func TestMain(m *testing.M) {
	if out := os.Getenv(profileEnv); out != "" {
		os.Exit(profileCell(out))
	}
	os.Exit(m.Run())
}

// profileCell is that cell: it returns the exit status.
func profileCell(out string) int {
	write := func(v any) int {
		b, err := json.Marshal(v)
		if err == nil {
			err = os.WriteFile(out, b, 0o644)
		}
		if err != nil {
			fmt.Println(err)
			return 2
		}
		return 0
	}
	env, err := lab.Open()
	if err != nil {
		return write(map[string]string{"error": err.Error()})
	}
	defer env.Close()
	t, err := SoftmaxTrial(env, stepCluster)
	if err != nil {
		return write(map[string]string{"error": err.Error()})
	}
	f, err := env.ProfileTrial(t, "")
	if err != nil {
		return write(map[string]string{"error": err.Error()})
	}
	return write(f)
}

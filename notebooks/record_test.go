package notebooks

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Without a GPU, make record says the records are measured on one and what the no-GPU mode shows
// instead, before building or writing anything.
func TestRecordNeedsAGPU(t *testing.T) {
	if mode, err := exec.Command("bash", "../.ci/mode.sh").Output(); err != nil || strings.TrimSpace(string(mode)) != "nogpu" {
		t.Skipf("mode %q (%v): this machine has a GPU, so record.sh would record", mode, err)
	}
	out := filepath.Join(t.TempDir(), "rec")
	cmd := exec.Command("bash", "../.ci/record.sh", out)
	msg, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 2 {
		t.Fatalf("record.sh without a GPU: exit %d (%v), want 2\n%s", code, err, msg)
	}
	if !strings.Contains(string(msg), "no GPU here") || !strings.Contains(string(msg), "results/") {
		t.Errorf("record.sh without a GPU said %q; want it to say there is no GPU and that the no-GPU mode shows results/", msg)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("record.sh without a GPU made %s", out)
	}
}

// adopt.sh needs the folder record.sh wrote, and says so.
func TestAdoptNamesItsFolder(t *testing.T) {
	cmd := exec.Command("bash", "../.ci/adopt.sh", filepath.Join(t.TempDir(), "missing"))
	msg, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("adopt.sh with a missing folder succeeded:\n%s", msg)
	}
	if !strings.Contains(string(msg), "missing") {
		t.Errorf("adopt.sh with a missing folder said %q; want the folder named", msg)
	}
}

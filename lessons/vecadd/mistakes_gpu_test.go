//go:build !nocuda

package vecadd

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// Each mistake of notebook 09 runs as its cell does, in a process of its own, on the GPU: it ends
// within its deadline (the loop that never ends: the 10 s floor, as the original naive takes well
// under 0.1 s per launch), with its exit status and its message; no process of it is left on the
// GPU; and the next cell's work (the original step, here in this process) runs as usual. The
// sanitizer's cases (a run under compute-sanitizer each) are left out in -short mode.
func TestMistakesGiveTheirMessages(t *testing.T) {
	env := labtest.Open(t)
	for _, c := range mistakeCases {
		t.Run(c.name, func(t *testing.T) {
			if c.tool != "" && testing.Short() {
				t.Skip("a run under compute-sanitizer: left out in -short mode")
			}
			limit := time.Minute
			if c.tool != "" {
				limit = lab.SanitizeLimit + time.Minute
			}
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), mistakeEnv+"="+c.name, mistakeToolEnv+"="+c.tool)
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var werr error
			select {
			case werr = <-done:
			case <-time.After(limit):
				cmd.Process.Kill()
				<-done
				t.Fatalf("still running after %v:\n%s", limit, out.String())
			}
			took := time.Since(start)
			code := 0
			var ee *exec.ExitError
			if errors.As(werr, &ee) {
				code = ee.ExitCode()
			} else if werr != nil {
				t.Fatal(werr)
			}
			text := strings.Join(strings.Fields(out.String()), " ")
			t.Logf("%s: exit %d after %v:\n%s", c.name, code, took.Round(100*time.Millisecond), out.String())
			if code != c.exit {
				t.Errorf("exit status %d, want %d", code, c.exit)
			}
			for _, w := range c.want {
				if !strings.Contains(text, strings.Join(strings.Fields(w), " ")) {
					t.Errorf("the cell does not say %q", w)
				}
			}
			if c.exit != 0 && took > lab.DeadlineFloor+40*time.Second {
				t.Errorf("took %v: past its deadline of %v and the cell's setup", took, lab.DeadlineFloor)
			}
			if pid := cmd.Process.Pid; onGPU(t, pid) {
				t.Errorf("the cell's process %d is still on the GPU", pid)
			}
			// The next cell's work runs as usual.
			p, err := NewProblem(env, 1<<20, 5)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Free()
			res, err := p.Check(Steps[0], "")
			if err != nil || !res.OK {
				t.Errorf("the original naive after the mistake: %+v, %v", res, err)
			}
		})
	}
}

// onGPU reports whether nvidia-smi still lists pid as a compute process, after giving the driver a
// few seconds to free an ended one.
func onGPU(t *testing.T, pid int) bool {
	t.Helper()
	for try := 0; try < 10; try++ {
		out, err := exec.Command("nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader").Output()
		if err != nil {
			t.Logf("nvidia-smi: %v (the check of processes left on the GPU is skipped)", err)
			return false
		}
		found := false
		for _, f := range strings.Fields(string(out)) {
			found = found || f == strconv.Itoa(pid)
		}
		if !found {
			return false
		}
		time.Sleep(500 * time.Millisecond)
	}
	return true
}

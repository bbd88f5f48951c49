package labtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/nsight"
)

// A lesson's GPU test profiles a step as a notebook's Profile cell does: in a process of its own
// whose children run under ncu. The test binary is that process: its TestMain calls ProfileCell,
// which acts as the cell when the variable named env is set (a file name), and ProfileInChild starts
// the binary again with that variable and reads what the cell wrote.

// ProfileCell is the cell's side: when the variable env names a file, it opens the lab, gets the
// trials and the reader's code from trials, runs ProfileTrial on each in order (the code goes with
// the last; a cell may profile several steps, as notebook 00's does), writes the last one's
// profiles (or the first error) to that file as JSON and returns true with the exit status;
// otherwise it returns false and TestMain runs the tests. The children under ncu are this binary
// again, with the same variable, and reach the same calls: each runs its own trial and passes over
// the others (lab.ErrOtherStep).
func ProfileCell(env string, trials func(e *lab.Env) (ts []lab.Trial, code string, err error)) (ran bool, status int) {
	out := os.Getenv(env)
	if out == "" {
		return false, 0
	}
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
	fail := func(err error) (bool, int) { return true, write(map[string]string{"error": err.Error()}) }
	e, err := lab.Open()
	if err != nil {
		return fail(err)
	}
	defer e.Close()
	ts, code, err := trials(e)
	if err != nil {
		return fail(err)
	}
	if len(ts) == 0 {
		return fail(fmt.Errorf("no trial to profile"))
	}
	var f *nsight.File
	for i, t := range ts {
		c := ""
		if i == len(ts)-1 {
			c = code
		}
		f, err = e.ProfileTrial(t, c)
		if err != nil && !errors.Is(err, lab.ErrOtherStep) {
			return fail(err)
		}
	}
	return true, write(f)
}

// ProfileInChild runs the test binary again as the Profile cell (ProfileCell, with the variable
// env) and returns the profiles it wrote. It skips the test where ncu is missing or the driver keeps
// the GPU's counters for administrators, and fails it on any other error.
func ProfileInChild(t *testing.T, env string) *nsight.File {
	t.Helper()
	tool, err := nsight.FindTool()
	if err != nil {
		t.Skipf("profiling needs Nsight Compute: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "profile.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*lab.ProfileLimit+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+out)
	start := time.Now()
	msg, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the profile cell: %v\n%s", err, msg)
	}
	t.Logf("%s: the cell's runs under ncu took %s", tool, time.Since(start).Round(time.Second))
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the cell wrote nothing: %v\n%s", err, msg)
	}
	var failed struct{ Error string }
	if json.Unmarshal(b, &failed) == nil && failed.Error != "" {
		if strings.Contains(failed.Error, "ERR_NVGPUCTRPERM") {
			t.Skipf("the GPU's counters are restricted here: %s", failed.Error)
		}
		t.Fatalf("ProfileTrial: %s", failed.Error)
	}
	var f nsight.File
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return &f
}

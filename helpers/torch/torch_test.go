package torch

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestAvailableSaysWhatIsMissing(t *testing.T) {
	t.Setenv("KERNELS_PYTHON", filepath.Join(t.TempDir(), "no-python"))
	if _, err := Available(); err == nil || !strings.Contains(err.Error(), "unavailable") {
		t.Errorf("a missing interpreter gave %v", err)
	}
}

func TestRunPassesArgsAndReadsResult(t *testing.T) {
	// A stand-in interpreter that ignores the prelude (no torch here) and echoes stdin: it tests the
	// plumbing, not PyTorch; the real baselines run on the GPU machine.
	dir := t.TempDir()
	fake := filepath.Join(dir, "py")
	os.WriteFile(fake, []byte("#!/bin/sh\necho noise\ncat\n"), 0o755)
	t.Setenv("KERNELS_PYTHON", fake)
	var out struct{ N int }
	if err := Run("", map[string]int{"n": 7}, &out, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if out.N != 7 {
		t.Errorf("result %+v, want N=7", out)
	}
	os.WriteFile(fake, []byte("#!/bin/sh\necho boom >&2\nexit 3\n"), 0o755)
	if err := Run("", nil, &out, 10*time.Second); err == nil || !strings.Contains(strings.Split(err.Error(), "\n")[0], "boom") {
		t.Errorf("a failing script gave %v", err)
	}
}

// A baseline's timing keeps its median, range and samples as the suite keeps a kernel's.
func TestTimingAsTheSuitesTiming(t *testing.T) {
	tm := Timing{MedianMS: 2, MinMS: 1, MaxMS: 3, Samples: []float64{1, 2, 3}}
	b := tm.Bench()
	if b.Median != 2 || b.Min != 1 || b.Max != 3 || !slices.Equal(b.Samples, tm.Samples) {
		t.Errorf("Bench() = %+v from %+v", b, tm)
	}
}

//go:build !nocuda

package matmul

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/nsight"
)

// Step 7 and a reader's copy of it profiled as the notebook's Profile cell runs them (a process of
// its own, whose children run under ncu): two profiles, each of mm_warptile at the lesson's
// 4096^3 launch (the largest of the launches profiled, not the small check before it), with the
// bank-conflict counters and the FMA pipe the readings cite, and warp stall reasons. The swizzled
// tile's shared loads have (almost) no bank conflicts. Skipped when ncu is not found or the driver
// keeps the counters for administrators.
func TestProfileFromTry(t *testing.T) {
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
	cmd.Env = append(os.Environ(), profileEnv+"="+out)
	start := time.Now()
	msg, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the profile cell: %v\n%s", err, msg)
	}
	t.Logf("%s: two runs under ncu in %s", tool, time.Since(start).Round(time.Second))
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
	if f.Lesson != ID || len(f.Profiles) != 2 {
		t.Fatalf("lesson %s, %d profiles, want %s and 2 (the original, yours)", f.Lesson, len(f.Profiles), ID)
	}
	for i, step := range []string{"the original 7", "your 7"} {
		p := f.Profiles[i]
		if p.Step != step || p.Kernel.Name != "mm_warptile" || p.Kernel.Grid != "(32, 32, 1)" {
			t.Errorf("profile %d: step %q kernel %q grid %s, want %q, mm_warptile and (32, 32, 1) (4096^3)", i, p.Step, p.Kernel.Name, p.Kernel.Grid, step)
		}
		conflicts, ok1 := p.Kernel.Value(conflictsLd)
		waves, ok2 := p.Kernel.Value(wavefrontsLd)
		if !ok1 || !ok2 || waves <= 0 || conflicts > 0.01*waves {
			t.Errorf("%s: shared-load bank conflicts %.4g of %.4g wavefronts (present %v %v), want under 1%%", step, conflicts, waves, ok1, ok2)
		}
		if fma, ok := p.Kernel.Value(fmaPipe); !ok || fma <= 0 || fma > 100 {
			t.Errorf("%s: FMA pipe %.4g (present %v), want a share of its peak", step, fma, ok)
		}
		if len(p.Kernel.Stalls()) == 0 {
			t.Errorf("%s: no warp stall reasons", step)
		}
		if p.Note != "" {
			t.Logf("%s: %s", step, p.Note)
		}
	}
	t.Log(nsight.Table(&f).Text())
}

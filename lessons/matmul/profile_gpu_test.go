//go:build !nocuda

package matmul

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"

	"github.com/cudalessons/cudalessons/helpers/nsight"
)

// Step 7 and a reader's copy of it profiled as the notebook's Profile cell runs them (a process of
// its own, whose children run under ncu): two profiles, each of mm_warptile at the lesson's
// 4096^3 launch (the largest of the launches profiled, not the small check before it), with the
// bank-conflict counters and the FMA pipe the readings cite, and warp stall reasons. The swizzled
// tile's shared loads have (almost) no bank conflicts. Skipped when ncu is not found or the driver
// keeps the counters for administrators.
func TestProfileFromTry(t *testing.T) {
	f := labtest.ProfileInChild(t, profileEnv)
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
	t.Log(nsight.Table(f).Text())
}

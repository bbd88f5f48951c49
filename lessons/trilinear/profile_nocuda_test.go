//go:build nocuda

package trilinear

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/sass"
	kt "github.com/cudalessons/cudalessons/kernels/trilinear"
)

// Without a GPU, a Profile cell compiles the reader's float4 step, says what profiling needs and
// shows the recorded profile of the original; a step that does not exist is an error naming it.
func TestProfileCellWithoutAGPU(t *testing.T) {
	env := labtest.OpenFresh(t)
	out := labtest.CaptureShow(t)
	st, err := StepByName(ProfiledStep)
	if err != nil {
		t.Fatal(err)
	}
	src, err := kt.Source(st.File)
	if err != nil {
		t.Fatal(err)
	}
	if err := Profile(env, ProfiledStep, "// my copy\n"+src.Code); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Your " + ProfiledStep + " compiled. Profiling it needs a GPU", "The recorded profile of the original " + ProfiledStep} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the cell does not say %q:\n%s", want, out.String())
		}
	}
	if err := Profile(env, "9 warp drive", ""); err == nil || !strings.Contains(err.Error(), "9 warp drive") {
		t.Errorf("an unknown step: %v", err)
	}
}

// The machine code the notebook points at: step 3's forward kernel loads feats 128 bits at a time,
// step 2's never does. No GPU needed (nvdisasm, for the recorded GPU's architecture).
func TestSASSOfTheFloat4Step(t *testing.T) {
	env := labtest.OpenFresh(t)
	wide := map[string]int{}
	for _, step := range []string{"2 coalesced", ProfiledStep} {
		st, err := StepByName(step)
		if err != nil {
			t.Fatal(err)
		}
		src, err := kt.Source(st.File)
		if err != nil {
			t.Fatal(err)
		}
		l, err := env.SASS(src, compile.Options{})
		if err != nil {
			t.Skipf("no SASS here: %v", err)
		}
		for _, k := range l.Kernels {
			if k.Name == st.Kernel {
				wide[step] = sass.CountOf(k, "global loads, 128-bit")
			}
		}
	}
	if wide[ProfiledStep] == 0 || wide["2 coalesced"] != 0 {
		t.Errorf("128-bit global loads: %v, want some in %s and none in 2 coalesced", wide, ProfiledStep)
	}
}

//go:build nocuda

package hopper

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// Without a GPU, a Profile cell of the TMA step either compiles the reader's copy and says what
// profiling needs (NVRTC 12 or newer) or says that this NVRTC cannot compile for compute_90a; either
// way it shows the recorded profile. A step that does not exist is an error naming it.
func TestProfileCellWithoutAGPU(t *testing.T) {
	env := labtest.OpenFresh(t)
	out := labtest.CaptureShow(t)
	st, err := StepByName(ProfiledStep)
	if err != nil {
		t.Fatal(err)
	}
	src, err := st.Source("")
	if err != nil {
		t.Fatal(err)
	}
	if err := Profile(env, ProfiledStep, "// my copy\n"+src.Code); err != nil {
		t.Fatal(err)
	}
	said := out.String()
	if !strings.Contains(said, "Profiling it needs a GPU") && !strings.Contains(said, "Not compiled") {
		t.Errorf("the cell says neither what profiling needs nor why it did not compile:\n%s", said)
	}
	if !strings.Contains(said, ProfiledStep) || !strings.Contains(said, "wgmma") {
		t.Errorf("the cell does not show the recorded profile of %s:\n%s", ProfiledStep, said)
	}
	if err := Profile(env, "9 warp drive", ""); err == nil || !strings.Contains(err.Error(), "9 warp drive") {
		t.Errorf("an unknown step: %v", err)
	}
}

// On a GPU that is not a Hopper (a T4, emulated), the Profile cell names the need and shows the
// recorded Hopper profile instead; nothing fails.
func TestProfileCellOffHopper(t *testing.T) {
	t.Setenv("KERNELS_EMULATE", "t4")
	env := labtest.OpenFresh(t)
	out := labtest.CaptureShow(t)
	if err := Profile(env, ProfiledStep, ""); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "needs compute capability 9.0") || !strings.Contains(s, "Nsight Compute profile of "+ID) {
		t.Errorf("the cell says:\n%s", s)
	}
}

package trilinear

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// Every step runs on every profile, the T4 included: the 16-bit step keeps bfloat16 as storage
// and computes in float32, which needs nothing of compute capability 8.0.
func TestStepsOnProfiles(t *testing.T) {
	var names []string
	for _, st := range Steps {
		names = append(names, st.Name)
	}
	labtest.EveryStepRuns(t, Lesson, names)
	// a GPU that declares less than the sources need is refused by their (absent) needs: none
	if n := len(Lesson.RefusedOn(gpu.DeviceInfo{Major: 7, Minor: 5})); n != 0 {
		t.Errorf("a bare 7.5 device refuses %d steps", n)
	}
}

// Every table and figure works on the recorded run as each profile would have measured it.
func TestTablesWithoutRefused(t *testing.T) { labtest.OnProfiles(t, Lesson, nil) }

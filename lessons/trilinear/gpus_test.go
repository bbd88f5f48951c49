package trilinear

import (
	"testing"

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
}

// Every table and figure works on the recorded run as each profile would have measured it.
func TestTablesWithoutRefused(t *testing.T) { labtest.OnProfiles(t, Lesson, nil) }

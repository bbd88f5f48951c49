//go:build !nocuda

package oneflow

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// Under the T4's limits the half and half2 atomics run (they need 7.0): the atomics section records
// every step and refuses none, as Steps says.
func TestAtomicsOnT4Limits(t *testing.T) {
	t.Setenv(gpu.EmulateEnv, "t4")
	env := labtest.Open(t)
	if ref := Lesson.RefusedOn(env.Device()); len(ref) != 0 {
		t.Fatalf("the T4 refuses %v", ref)
	}
	run, err := RunSection(env, SecAtomics, true)
	if err != nil {
		t.Fatal(err)
	}
	if recs := lab.Refused(run); len(recs) != 0 {
		t.Errorf("refused records: %v", recs)
	}
	for _, s := range AtomicSteps {
		found := false
		for _, r := range run.Records {
			if r.Variant == s.Name && r.MedianMS > 0 {
				found = true
			}
		}
		if !found {
			t.Errorf("%s not measured on the T4's limits", s.Name)
		}
	}
}

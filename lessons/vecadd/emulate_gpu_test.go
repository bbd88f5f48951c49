//go:build !nocuda

package vecadd

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// Under the T4's limits the quick run measures the three steps and refuses none, as Steps says.
func TestRunOnT4Limits(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole quick run")
	}
	t.Setenv(gpu.EmulateEnv, "t4")
	env := labtest.Open(t)
	run, err := Run(env, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(Lesson.RefusedOn(env.Device())) != 0 || len(lab.Refused(run)) != 0 {
		t.Errorf("refused on the T4's limits: %v", lab.Refused(run))
	}
	for _, s := range Steps {
		if r, ok := run.Find("add", s.Name, 0); !ok || r.MedianMS <= 0 {
			t.Errorf("%s not measured: %+v", s.Name, r)
		}
	}
}

//go:build nocuda

package conv

import (
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
)

// In the no-GPU mode every cell of the notebook works: kernels compile, edited steps compile and
// show the recorded numbers, the CPU demonstrations run, and the exercises compile; the untouched
// exercise 2 fails on its structure (a signed atomicMax only), its solution does not.
func TestNoGPUMode(t *testing.T) {
	env := labtest.OpenFresh(t)
	if env.GPU() {
		t.Skip("a GPU answered")
	}
	if err := Intro(env); err != nil {
		t.Fatal(err)
	}
	for _, st := range Steps {
		if err := Try(env, st.Name, ""); err != nil {
			t.Errorf("%s: %v", st.Name, err)
		}
		if err := Walk(env, st.Name); err != nil {
			t.Errorf("%s: %v", st.Name, err)
		}
	}
	if err := Try(env, Steps[0].Name, "this is not CUDA"); err == nil {
		t.Error("a broken edit compiled")
	}
	ShowBitOrder()
	for _, f := range []func(*lab.Env) error{Overview, NoReLUDemo, ShowFused, ShowDeep, ShowSweep, ShowTrajectory, ShowTargets, Reports, ClosingNote} {
		if err := f(env); err != nil {
			t.Error(err)
		}
	}
	for _, x := range Lesson.Exercises {
		sol, err := x.Solution()
		if err != nil {
			t.Fatal(err)
		}
		r, err := x.Check(env, sol)
		if err != nil || !r.Compiled || r.Ran || !r.Passed || !strings.Contains(r.Reason, "needs a GPU") {
			t.Errorf("exercise %d solution: %+v %v", x.Number, r, err)
		}
		r, err = x.Check(env, x.Starter)
		if err != nil || !r.Compiled || r.Ran {
			t.Errorf("exercise %d starter: %+v %v", x.Number, r, err)
		}
	}
	r, _ := Lesson.Exercises[1].Check(env, Lesson.Exercises[1].Starter)
	if r.Passed || !strings.Contains(r.Reason, "signed integer atomicMax") {
		t.Errorf("exercise 2's starter should fail on its structure: %s", r.Reason)
	}
	if err := env.Exercise(Lesson, 1, Lesson.Exercises[0].Starter); err != nil {
		t.Error(err)
	}
}

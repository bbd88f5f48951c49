//go:build nocuda

package reduce

import (
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"strings"
	"testing"
)

// In the no-GPU mode every cell of the notebook works: kernels compile, edited steps compile and
// show the recorded numbers, the CPU demonstrations run, and the exercises compile; the untouched
// exercise 1 fails on its structure (no shuffles, a 256-float tree), its solution does not.
func TestNoGPUMode(t *testing.T) {
	env := labtest.OpenFresh(t)
	if env.GPU() {
		t.Skip("a GPU answered")
	}
	if err := Intro(env); err != nil {
		t.Fatal(err)
	}
	if err := CompileAll(env); err != nil {
		t.Fatal(err)
	}
	for _, s := range SoftmaxSteps {
		if err := TrySoftmax(env, s.Name, ""); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
	for _, s := range LNSteps {
		if err := TryLayerNorm(env, s.Name, ""); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
	if err := TrySoftmax(env, SoftmaxSteps[0].Name, "this is not CUDA"); err == nil {
		t.Error("a broken edit compiled")
	}
	ZerosDemo()
	StabilityDemo()
	if err := ShowBackwardProof(); err != nil {
		t.Fatal(err)
	}
	for _, sec := range Sections {
		if err := ShowSection(env, sec, true); err != nil {
			t.Errorf("section %s: %v", sec, err)
		}
	}
	if err := ShowTargets(env, true); err != nil {
		t.Error(err)
	}
	for _, x := range Lesson.Exercises {
		// Exercise 1's starter fails on its structure below; exercise 2's is wrong only in its
		// numbers, so it fails on the GPU (gpu_test.go).
		r, err := x.Check(env, x.Starter)
		if err != nil || !r.Compiled || r.Ran {
			t.Errorf("exercise %d starter: %+v %v", x.Number, r, err)
		}
		sol, err := x.Solution()
		if err != nil {
			t.Fatal(err)
		}
		r, err = x.Check(env, sol)
		if err != nil || !r.Compiled || r.Ran || !r.Passed || !strings.Contains(r.Reason, "needs a GPU") {
			t.Errorf("exercise %d solution: %+v %v", x.Number, r, err)
		}
	}
	r, _ := Lesson.Exercises[0].Check(env, Lesson.Exercises[0].Starter)
	if r.Passed || !strings.Contains(r.Reason, "shfl") {
		t.Errorf("exercise 1's starter should fail on its structure: %s", r.Reason)
	}
	if err := env.Exercise(Lesson, 2, Lesson.Exercises[1].Starter); err != nil {
		t.Error(err)
	}
}

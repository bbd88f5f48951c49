//go:build nocuda

package matmul

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
)

// Without a GPU the exercises compile, exercise 1's starter fails on its structure (no shared
// tiles), and the solutions pass all that is decided without a GPU (Passed, not Ran: lab.ExerciseResult).
// Exercise 2's starter is wrong only in its numbers, so it fails on the GPU (gpu_test.go).
func TestExercisesWithoutGPU(t *testing.T) {
	env, err := lab.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	r, err := Exercise1.Check(env, Exercise1.Starter)
	if err != nil || !r.Compiled || r.Passed || !strings.Contains(r.Reason, "shared memory") {
		t.Errorf("exercise 1 starter: %+v, %v", r, err)
	}
	for _, x := range Exercises {
		sol, err := x.Solution()
		if err != nil {
			t.Fatal(err)
		}
		if r, err := x.Check(env, sol); err != nil || !r.Compiled || !r.Passed || r.Ran || !strings.Contains(r.Reason, "needs a GPU") {
			t.Errorf("exercise %d solution without a GPU: %+v, %v", x.Number, r, err)
		}
	}
	if r, err := Exercise2.Check(env, Exercise2.Starter); err != nil || !r.Compiled || r.Ran {
		t.Errorf("exercise 2 starter: %+v, %v", r, err)
	}
	if r, _ := Exercise2.Check(env, "this is not CUDA ex2_split"); r.Compiled || r.Passed {
		t.Errorf("a broken kernel compiled: %+v", r)
	}
}

// The notebook's no-GPU cells run without error.
func TestNotebookCellsWithoutGPU(t *testing.T) {
	env, err := lab.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	for _, f := range []func(*lab.Env) error{Intro, Limits, Banks} {
		if err := f(env); err != nil {
			t.Error(err)
		}
	}
	for _, st := range Steps {
		if _, err := CompileReport(env, st); err != nil {
			t.Errorf("%s: %v", st.Name, err)
		}
	}
	if err := Try(env, "5", ""); err != nil {
		t.Error(err)
	}
}

// Under the T4's limits exercise 2 still compiles and passes all that is decided, and says that its
// check (step 9's product) is refused on this GPU: the grader counts it as not run, not failed.
func TestExercise2OnT4WithoutGPU(t *testing.T) {
	t.Setenv(gpu.EmulateEnv, "t4")
	env, err := lab.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	sol, err := Exercise2.Solution()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Exercise2.Check(env, sol)
	if err != nil || !r.Compiled || !r.Passed || r.Ran || !strings.Contains(r.Reason, "compute capability 8.0") {
		t.Errorf("exercise 2 on a T4: %+v, %v", r, err)
	}
	if err := Walk(env, "8"); !lab.IsRefusal(err) {
		t.Errorf("Walk of step 8 on a T4: %v", err)
	}
	if err := Try(env, "9", ""); !lab.IsRefusal(err) {
		t.Errorf("Try of step 9 on a T4: %v", err)
	}
}

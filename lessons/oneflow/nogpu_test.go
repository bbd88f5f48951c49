//go:build nocuda

package oneflow

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
)

// In the no-GPU mode every cell of the notebook must work: kernels and exercises compile, runs are
// refused with a clear error, and a missing recording is a note, not a failure.
func TestNoGPUMode(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	env, err := lab.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if env.GPU() {
		t.Skip("a GPU answered")
	}
	if err := CompileAll(env); err != nil {
		t.Fatal(err)
	}
	for _, ex := range Exercises {
		res, err := CheckExercise(env, ex, ex.Starter)
		if err != nil || !res.Compiled || res.Ran {
			t.Errorf("exercise %d in the no-GPU mode: %+v %v", ex.Number, res, err)
		}
		if err := ShowExercise(env, ex, ex.Starter); err != nil {
			t.Error(err)
		}
	}
	if _, err := CheckExercise(env, Exercise1, "this is not CUDA"); err == nil {
		t.Error("a broken exercise compiled")
	}
	if _, err := Run(env, true); err == nil {
		t.Error("Run without a GPU returned no error")
	}
	for _, sec := range Sections {
		if err := ShowSection(env, sec, true); err != nil {
			t.Errorf("section %s: %v", sec, err)
		}
	}
	if err := ShowTargets(env, true); err != nil {
		t.Error(err)
	}
	if err := ShowSource("2_packed.cu"); err != nil {
		t.Error(err)
	}
}

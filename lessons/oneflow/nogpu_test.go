//go:build nocuda

package oneflow

import (
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"strings"
	"testing"
)

// In the no-GPU mode every cell of the notebook must work: kernels and exercises compile, runs are
// refused with a clear error, and a missing recording is a note, not a failure.
func TestNoGPUMode(t *testing.T) {
	env := labtest.OpenFresh(t)
	if env.GPU() {
		t.Skip("a GPU answered")
	}
	if err := CompileAll(env); err != nil {
		t.Fatal(err)
	}
	// Without a GPU the solutions compile and say they need one; the untouched starters (correct but
	// slow) already fail from their PTX: 2-byte loads where the task asks for 16 or 4.
	for _, ex := range Lesson.Exercises {
		sol, err := ex.Solution()
		if err != nil {
			t.Fatal(err)
		}
		res, err := ex.Check(env, sol)
		if err != nil || !res.Compiled || !res.Passed || res.Ran || !strings.Contains(res.Reason, "needs a GPU") {
			t.Errorf("exercise %d, solution, in the no-GPU mode: %+v %v", ex.Number, res, err)
		}
		res, err = ex.Check(env, ex.Starter)
		if err != nil || !res.Compiled || res.Passed || !strings.HasPrefix(res.Reason, "Not yet:") {
			t.Errorf("exercise %d, starter, in the no-GPU mode: %+v %v", ex.Number, res, err)
		}
		t.Logf("exercise %d, starter: %s", ex.Number, res.Reason)
		if err := env.Exercise(Lesson, ex.Number, ex.Starter); err != nil {
			t.Error(err)
		}
	}
	if res, err := Exercise1.Check(env, "this is not CUDA"); err != nil || res.Compiled || res.Passed || res.Log == "" {
		t.Errorf("a broken exercise: %+v %v", res, err)
	}
	// Packing only the loads is half the task.
	loadsOnly := strings.Replace(solutionCode(t, Exercise1), "reinterpret_cast<uint4 *>(z)[i] = c;",
		"for (int j = 0; j < 4; j++) { z[8 * i + 2 * j] = c2[j].x; z[8 * i + 2 * j + 1] = c2[j].y; }", 1)
	if res, err := Exercise1.Check(env, loadsOnly); err != nil || res.Passed || !strings.Contains(res.Reason, "widest store 2 bytes") {
		t.Errorf("exercise 1 with unpacked stores: %+v %v", res, err)
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

//go:build !nocuda

package matmul

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// Under the T4's limits the run measures every step the T4 runs and records the others as refused:
// exactly the refused steps of StepChecks, one refused record each, and no time for any of them.
func TestRunOnT4Limits(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole quick run")
	}
	env, _ := labtest.RunEmulated(t, Lesson, "t4")
	if len(Lesson.RefusedOn(env.Device())) == 0 {
		t.Fatal("the T4 refuses nothing")
	}
}

// Under the T4's limits exercise 2's solution compiles, and its check says step 9 is refused on
// this GPU (passed as far as decided, not run) instead of failing.
func TestExercise2OnT4Limits(t *testing.T) {
	t.Setenv(gpu.EmulateEnv, "t4")
	env := labtest.Open(t)
	sol, err := Exercise2.Solution()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Exercise2.Check(env, sol)
	if err != nil || !r.Compiled || !r.Passed || r.Ran || !strings.Contains(r.Reason, "refused on this GPU") {
		t.Errorf("exercise 2 on the T4's limits: %+v, %v", r, err)
	}
}

// Under the A10's limits (99 KiB a block) the tensor-core steps run with 2 pipeline stages, step 7
// with 3 (96 KiB), and step 7 built with 2 stages as on GPUs with less, and all are correct on every
// awkward shape they take (every output checked).
func TestTwoStagesOnA10Limits(t *testing.T) {
	t.Setenv(gpu.EmulateEnv, "a10")
	env := labtest.Open(t)
	d := env.Session.Device
	steps := append(append([]Step{}, Steps[6:]...), Variants[1:len(Variants)-1]...)
	steps = append(steps, WarpTileBuild{Stages: 2}.Step())
	for _, st := range steps {
		want := 2
		if st.Name == Steps[6].Name {
			want = 3
		}
		if n := st.StagesOn(d); n != want {
			t.Fatalf("%s: %d stages on %s, want %d", st.Name, n, d.Name, want)
		}
	}
	for i, s := range []Shape{{128, 128, 32}, {256, 384, 96}, {512, 256, 1024}} {
		p, err := NewCheckedProblem(env, s, uint64(70+i))
		if err != nil {
			t.Fatal(err)
		}
		if ran := checkSteps(t, p, steps); len(ran) != len(steps) {
			t.Errorf("on %v, 2 stages: only %d of %d steps ran: %v", s, len(ran), len(steps), ran)
		}
		p.Free()
	}
	if defs := strings.Join(Steps[7].DefinesOn(d), " "); !strings.Contains(defs, "STAGES=2") {
		t.Errorf("step 8 on %s is built with %s", d.Name, defs)
	}
}

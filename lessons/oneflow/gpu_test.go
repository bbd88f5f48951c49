//go:build !nocuda

package oneflow

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// Every elementwise kernel, both dtypes, on odd sizes and on aligned and misaligned views, on fresh
// random inputs with a NaN-poisoned output, against the float64 product.
func TestMulKernels(t *testing.T) {
	env := labtest.Open(t)
	for _, d := range DTypes {
		for _, n := range []int{0, 1, 7, 8, 9, 255, 1001, 1<<20 + 3} {
			for _, off := range []int{0, 1, 4} {
				steps := MulSteps
				if n >= 1001 { // every point of step 3's sweep too, past its tails
					steps = everyMulStep()
				}
				checkMulSteps(t, env, d, n, off, steps)
			}
		}
	}
}

// everyMulStep is every elementwise step a reader can name: the ladder, step 3 with its file's
// defaults, and every point of step 3's sweep.
func everyMulStep() []MulStep {
	return append(append(append([]MulStep{}, MulSteps...), InflightDefault), InflightSweep()...)
}

// checkMulSteps checks each of steps on n fresh random elements of d, each buffer off elements into
// its allocation: correct on a NaN-poisoned output, and a packed step on its pack-1 kernel exactly
// when a pointer is not 16-byte aligned.
func checkMulSteps(t *testing.T, env *lab.Env, d DType, n, off int, steps []MulStep) {
	t.Helper()
	p, err := NewMulProblem(env, d, n, uint64(n+off), off)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	for _, s := range steps {
		res, plan, err := p.Check(s, "")
		if err != nil {
			t.Fatalf("%s %s n=%d off=%d: %v", s.Name, d, n, off, err)
		}
		if !res.OK {
			t.Errorf("%s %s n=%d off=%d (%s): %v", s.Name, d, n, off, plan.Kernel, res.Err())
		}
		misaligned := (off*d.Size())%16 != 0
		if s.PacksPerThread > 0 && misaligned != strings.Contains(plan.Kernel, "pack1") {
			t.Errorf("%s n=%d off=%d: kernel %s", d, n, off, plan.Kernel)
		}
	}
}

// Every atomics step on random inputs in {-1, 0, 1}: every partial sum is an integer of magnitude
// at most n <= 2048, exact in half whatever the order, so every step must return the exact sum.
func TestDotKernelsExact(t *testing.T) {
	env := labtest.Open(t)
	for _, n := range []int{0, 1, 2, 3, 255, 256, 257, 1000, 2047} {
		checkDotExact(t, env, n)
	}
}

// checkDotExact runs every atomics step, and the fast atomic's other two branches, on n <= 2048
// random inputs in {-1, 0, 1}, whose dot product every step must return exactly.
func checkDotExact(t *testing.T, env *lab.Env, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(n), 9))
	x, y := make([]float32, n), make([]float32, n)
	want := 0.0
	for i := range x {
		x[i], y[i] = float32(r.IntN(3)-1), float32(r.IntN(3)-1)
		want += float64(x[i]) * float64(y[i])
	}
	p, err := NewDotProblem(env, x, y)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	for _, s := range AtomicSteps {
		got, err := p.Result(s, "")
		if err != nil {
			t.Fatalf("%s n=%d: %v", s.Name, n, err)
		}
		if got != want {
			t.Errorf("%s n=%d: %g, want %g", s.Name, n, got, want)
		}
	}
	// The fast atomic's other two branches: the high lane, and the plain half atomic.
	for _, tg := range [][2]int{{1, 2}, {0, 1}} {
		if err := p.SetTarget(tg[0], tg[1]); err != nil {
			t.Fatal(err)
		}
		got, err := p.Result(AtomicSteps[2], "")
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("fast atomic into %d of %d, n=%d: %g, want %g", tg[0], tg[1], n, got, want)
		}
	}
}

// The pinned problem at 1M: each step equals the exact model of its own accumulation.
func TestDotPinnedModel(t *testing.T) {
	env := labtest.Open(t)
	n := 1 << 20
	p, err := PinnedDot(env, n)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	m := PinnedDotModel(n)
	for _, s := range AtomicSteps {
		got, err := p.Result(s, "")
		if err != nil {
			t.Fatal(err)
		}
		if got != m.Want[s.Name] {
			t.Errorf("%s: %.10g, model %.10g (float64 %.10g)", s.Name, got, m.Want[s.Name], m.Truth)
		}
	}
}

// Every upsample kernel, both dtypes and directions, on odd H and W, a batch of one, an empty
// tensor, the article's shape, and misaligned views (the pack2x step then falls back).
func TestUpsampleKernels(t *testing.T) {
	env := labtest.Open(t)
	for _, shape := range [][4]int{{1, 1, 1, 1}, {2, 3, 7, 9}, {1, 2, 5, 4}, {0, 3, 4, 4}, {3, 1, 1, 17}, ArticleShape} {
		for _, d := range DTypes {
			for _, off := range []int{0, 1} {
				checkUpSteps(t, env, d, shape, off)
			}
		}
	}
	if _, err := NewUpProblem(env, F32, [4]int{64, 64, 512, 512}, 1, 0); err == nil {
		t.Error("a shape over the index limit was accepted")
	}
}

// checkUpSteps checks every upsample step in both directions on random inputs of shape and d, each
// buffer off elements into its allocation: correct on a NaN-poisoned output, and the pack2x step on
// the generic kernel exactly when the view is misaligned (off 1).
func checkUpSteps(t *testing.T, env *lab.Env, d DType, shape [4]int, off int) {
	t.Helper()
	p, err := NewUpProblem(env, d, shape, uint64(shape[2]+off), off)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	for _, dir := range []string{Forward, Backward} {
		for _, s := range UpSteps {
			res, plan, err := p.Check(s, dir, "")
			if err != nil {
				t.Fatalf("%s %s %s %v off=%d: %v", s.Name, dir, d, shape, off, err)
			}
			if !res.OK {
				t.Errorf("%s %s %s %v off=%d (%s): %v", s.Name, dir, d, shape, off, plan.Kernel, res.Err())
			}
			if s.Name == "pack2x" && (off == 1) != plan.Generic {
				t.Errorf("%s %v off=%d: kernel %s", d, shape, off, plan.Kernel)
			}
		}
	}
}

// The solutions pass their exercises on the GPU and are timed against the baselines; the untouched
// starters (correct but slow) and a kernel that skips the last element fail.
func TestExercises(t *testing.T) {
	env := labtest.Open(t)
	for _, ex := range Lesson.Exercises {
		sol, err := ex.Solution()
		if err != nil {
			t.Fatal(err)
		}
		res, err := ex.Check(env, sol)
		if err != nil || !res.Passed || !res.Ran || res.Speedup() <= 0 {
			t.Errorf("exercise %d, solution: %+v %v", ex.Number, res, err)
		}
		t.Logf("exercise %d: yours %s, %s %s", ex.Number, res.Mine, res.RefName, res.Ref)
		res, err = ex.Check(env, ex.Starter)
		if err != nil || res.Passed {
			t.Errorf("exercise %d, starter: %+v %v", ex.Number, res, err)
		}
	}
	if res, err := Exercise1.Check(env, skipsLastElement(t)); err != nil || res.Passed || !res.Ran {
		t.Errorf("a kernel that skips the last element: %+v %v", res, err)
	}
}

// skipsLastElement is exercise 1's solution with one bug: it never writes the last element (a tail
// of n % 8 > 0 then keeps one NaN of the poisoned output).
func skipsLastElement(t testing.TB) string {
	return strings.Replace(solutionCode(t, Exercise1), "if (t < n) z[t]", "if (t < n - 1) z[t]", 1)
}

// The whole lesson in quick mode, with its tables, figures and targets (long: skipped by -short).
func TestRunQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	env := labtest.Open(t)
	run, err := Run(env, true)
	if err != nil {
		t.Fatal(err)
	}
	labtest.InPlan(t, env, Lesson, run, true)
	for _, tb := range Tables(run) {
		t.Log("\n" + tb.Text())
	}
	if _, err := Figures(run); err != nil {
		t.Error(err)
	}
	for _, r := range run.Records {
		if r.Kind == "kernel" && !r.Correct {
			t.Errorf("%s %s %s: not correct", r.Case, r.Variant, r.DType)
		}
		if r.Kind == "kernel" && (r.MedianMS <= 0 || math.IsNaN(r.MedianMS)) {
			t.Errorf("%s %s %s: no time", r.Case, r.Variant, r.DType)
		}
	}
}

//go:build !nocuda

package oneflow

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	ko "github.com/cudalessons/cudalessons/kernels/oneflow"
)

// The sanitizer pass's shapes: small, with every edge the kernels have.
var (
	// sanitizeMulN: 5 is a tail alone (fewer elements than a pack); 10243 is 1280 half packs (2560
	// float packs) and a tail of 3, so the packed kernels run 2 to 10 blocks, step 3's 4 packs per
	// thread leave the last packs of a trip past the end, and the naive and pack-1 kernels run 41.
	sanitizeMulN = []int{5, 10243}
	// sanitizeDotN: 3 is one pair and the odd element of the half2 step; 2047 is 8 blocks, the last
	// partial, for the block reduce's shared memory and atomics from several blocks.
	sanitizeDotN = []int{3, 2047}
	// sanitizeUpShapes: odd H and W over several blocks (378 input elements), and H = 1 with odd W.
	sanitizeUpShapes = [][4]int{{2, 3, 7, 9}, {3, 1, 1, 17}}
)

// TestSanitize is what cmd/sanitize runs under compute-sanitizer's memcheck, racecheck and
// synccheck: every kernel of kernels/oneflow at least once, each result checked against its float64
// reference on a NaN-poisoned output. It launches every elementwise step (the ladder, step 3 with
// its file's defaults and every point of its sweep: each packs-per-thread and cache-hint build) in
// both dtypes on aligned views (the packed kernels) and views one element in (their pack-1
// fallbacks); every atomics step on inputs whose dot product is exact, and the fast atomic's three
// branches; both upsample steps both ways in both dtypes, aligned and misaligned (pack2x falls
// back to the generic kernel); and each exercise's solution, compiled as its check compiles a
// reader's code and launched as the check launches it, with exercise 1's solution minus its last
// element, which the check must fail. The shapes are small (a few dozen blocks at most, racecheck
// slows a launch a hundredfold or more) but awkward: tails that are not a multiple of the pack,
// partial and several blocks, odd H and W. The exercises' own checks and Try are not called: they
// time the article's 32M-element and (16,32,80,80) problems.
func TestSanitize(t *testing.T) {
	env := labtest.Open(t)
	if ref := Lesson.RefusedOn(env.Device()); len(ref) != 0 {
		t.Errorf("%s refuses %d steps: %v", env.Device().Name, len(ref), ref)
	}
	for _, d := range DTypes {
		for _, n := range sanitizeMulN {
			for _, off := range []int{0, 1} {
				checkMulSteps(t, env, d, n, off, everyMulStep())
			}
		}
	}
	for _, n := range sanitizeDotN {
		checkDotExact(t, env, n)
	}
	for _, shape := range sanitizeUpShapes {
		for _, d := range DTypes {
			for _, off := range []int{0, 1} {
				checkUpSteps(t, env, d, shape, off)
			}
		}
	}

	mine := exerciseKernel(t, env, Exercise1, solutionCode(t, Exercise1))
	wrong := exerciseKernel(t, env, Exercise1, skipsLastElement(t))
	for _, n := range sanitizeMulN {
		if c := checkMulMine(t, env, mine, n); !c.OK {
			t.Errorf("exercise 1's solution, n=%d: %v", n, c.Err())
		}
		if c := checkMulMine(t, env, wrong, n); c.OK {
			t.Errorf("exercise 1's solution without its last element passed on n=%d", n)
		}
	}
	bwd := exerciseKernel(t, env, Exercise2, solutionCode(t, Exercise2))
	for _, shape := range sanitizeUpShapes {
		if c := checkUpMine(t, env, bwd, shape); !c.OK {
			t.Errorf("exercise 2's solution, %s: %v", fmtShape(shape), c.Err())
		}
	}

	labtest.LaunchedEvery(t, ko.Kernels, env)
}

// exerciseKernel compiles code for exercise x as the exercise's check does (buildExercise: under
// lab.ExerciseSource's name, its PTX read) and returns its kernel.
func exerciseKernel(t *testing.T, env *lab.Env, x lab.Exercise, code string) *gpu.Kernel {
	t.Helper()
	prog, _, res, err := buildExercise(env, x, code)
	if prog == nil {
		t.Fatalf("exercise %d: %s %v", x.Number, res.Reason, err)
	}
	k, err := prog.Kernel(x.Kernel)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// checkMulMine runs exercise 1's kernel k as its check does on n random halves (aligned: the
// exercise's kernel has no pack-1 fallback) and returns the check of its output.
func checkMulMine(t *testing.T, env *lab.Env, k *gpu.Kernel, n int) check.Result {
	t.Helper()
	p, err := NewMulProblem(env, F16, n, uint64(40+n%97), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	c, err := p.checkRun(p.mineLaunch(k))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkUpMine runs exercise 2's kernel k as its check does on random halves of shape (aligned: the
// exercise's kernel reads dy as __half2) and returns the check of dx.
func checkUpMine(t *testing.T, env *lab.Env, k *gpu.Kernel, shape [4]int) check.Result {
	t.Helper()
	p, err := NewUpProblem(env, F16, shape, 77, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	c, err := p.checkRun(Backward, p.mineLaunch(k))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

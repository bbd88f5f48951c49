//go:build !nocuda

package matmul

import (
	"slices"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	km "github.com/cudalessons/cudalessons/kernels/matmul"
)

// sanitizeShapes are small enough for racecheck and reach every edge: 67x45x33 is off every tile
// and vector width; 130x129x33 is one 128 x 128 x 32 tile and a sliver more in M, N and K (partial
// tiles for steps 1-3, which take any shape; the tiled steps refuse it); 128x128x32 is exactly one
// tile of every step (one k-tile: fewer than the pipelines' stages); 256x128x160 is two blocks and
// five k-tiles of 32, so the 2- and 3-stage pipelines wrap around. The kernels with shared memory
// launch at most 32 blocks of 256 threads or the same work in smaller blocks (the any-shape step's
// 64 x 64 tiles: 8 blocks in 5 slices of K, the last block of each tile adding the 5 up); those
// without (steps 1 and 2, the zeros and split kernels) up to 160.
var sanitizeShapes = []Shape{{67, 45, 33}, {130, 129, 33}, {128, 128, 32}, {256, 128, 160}}

// thinShapes are the thin-K step's shapes for the sanitizer: every depth 1..7, a single row and a
// single column, partial blocks of 32 columns and 8 rows, and 600 rows over a grid of 128 threads
// down the rows on an H100 (1000 columns: 32 x 16 blocks), so a thread runs the loop of 4 rows at a
// time and its remainder.
var thinShapes = []Shape{{67, 45, 1}, {1, 45, 2}, {67, 1, 3}, {33, 97, 4}, {600, 1000, 5}, {9, 40, 6}, {67, 45, 7}}

// TestSanitize launches every kernel of kernels/matmul once or a few times on sanitizeShapes, for
// cmd/sanitize's memcheck, racecheck and synccheck pass, and checks each result: every step and
// variant (defines and dtypes) and the any-shape step (the tile its plan picks, and every tile) on
// every shape its plan takes, with the zeros kernel failing the check; the thin-K step on
// thinShapes; both exercises' solutions, launched as their checks launch them but not on the
// article's shape they time on; Multiply on its any-shape (padded too), thin-K, fp16-split and
// 3xTF32 paths; the any-shape step's split K run twice in a row on one problem (its counters, which
// each launch must leave at zero); the autograd op's gradient check; and the pipelined steps again under the A10's
// limits, which build them with 2 stages. It fails unless every kernel of the folder was launched.
func TestSanitize(t *testing.T) {
	env := labtest.Open(t)
	d := env.Session.Device
	steps := append(append(append(append([]Step{}, Steps...), Variants...), AnyShape), anyShapeBuilds()...)
	ex1, err := Exercise1.Solution()
	if err != nil {
		t.Fatal(err)
	}
	ex2, err := Exercise2.Solution()
	if err != nil {
		t.Fatal(err)
	}
	prog, err := env.BuildWith(compile.Source{Name: lab.ExerciseSource(Exercise2.Kernel), Code: ex2}, compile.Options{}, Exercise2.Kernel)
	if err != nil {
		t.Fatal(err)
	}
	split, err := prog.Kernel(Exercise2.Kernel)
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]bool{}
	for i, s := range sanitizeShapes {
		p, err := NewCheckedProblem(env, s, uint64(90+i))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range checkSteps(t, p, steps) {
			ran[name] = true
		}
		if res, err := p.Check(Zeros, ""); err != nil || res.OK || res.NonFinite != 0 {
			t.Errorf("%s on %v: passed, left outputs unwritten or failed to run: %+v, %v", Zeros.Name, s, res, err)
		}
		if splitStep.Validate(s, d) == nil { // both exercises take the shapes step 9 takes
			res, err := p.Check(Ex1Step, ex1)
			wantOK(t, "exercise 1's solution on "+s.String(), res, err)
			_, res, err = p.checkSplit(split)
			wantOK(t, "exercise 2's solution on "+s.String(), res, err)
		}
		p.Free()
	}
	for _, st := range steps {
		if !ran[st.Name] {
			t.Errorf("%s ran on none of %v", st.Name, sanitizeShapes)
		}
	}

	for i, s := range thinShapes {
		p, err := NewCheckedProblem(env, s, uint64(110+i))
		if err != nil {
			t.Fatal(err)
		}
		if ran := checkSteps(t, p, []Step{ThinK}); len(ran) != 1 {
			t.Errorf("%s did not run on %v", ThinK.Name, s)
		}
		p.Free()
	}
	checkMultiply(t, env, Shape{M: 67, N: 45, K: 3}, false, ThinK.Name)
	checkMultiply(t, env, Shape{M: 130, N: 129, K: 33}, false, AnyShape.Name)
	checkPadded(t, env, Shape{M: 67, N: 45, K: 33}, 95)       // A, B and C padded
	checkPadded(t, env, Shape{M: 255, N: 255, K: 255}, 96)    // padded, and K split 8 ways
	checkSplitKTwice(t, env, Shape{M: 67, N: 45, K: 133}, 97) // split K twice in a row: the counters back at zero
	checkMultiply(t, env, Shape{M: 128, N: 128, K: 32}, false, "9 fp16x3 split")
	checkMultiply(t, env, Shape{M: 128, N: 128, K: 32}, true, "8b 3xTF32 split")
	// Two Multiply calls for each element of A and B (56 here): a shape with few elements.
	checkGrad(t, env, Shape{M: 3, N: 5, K: 7})

	t.Setenv(gpu.EmulateEnv, "a10")
	a10 := labtest.Open(t)
	staged := slices.DeleteFunc(slices.Clone(steps), func(st Step) bool { return st.StageBytes == 0 })
	// Step 7's 2-stage loop (3 stages fit the A10), and its swizzle for rows of 4 chunks (BK = 16).
	staged = append(staged, WarpTileBuild{Stages: 2}.Step(), WarpTileBuild{Stages: 2, BK: 16}.Step())
	ran = map[string]bool{}
	for i, s := range sanitizeShapes[2:] {
		p, err := NewCheckedProblem(a10, s, uint64(95+i))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range checkSteps(t, p, staged) {
			ran[name] = true
		}
		p.Free()
	}
	for _, st := range staged {
		want := 2
		if st.Name == Steps[6].Name {
			want = 3
		}
		if n := st.StagesOn(a10.Device()); n != want || !ran[st.Name] {
			t.Errorf("%s under the A10's limits: %d stages, ran %v", st.Name, n, ran[st.Name])
		}
	}

	labtest.LaunchedEvery(t, km.Kernels, env, a10)
}

// wantOK fails t unless a check ran and passed.
func wantOK(t *testing.T, what string, res check.Result, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", what, err)
	} else if !res.OK {
		t.Errorf("%s: %v", what, res.Err())
	}
}

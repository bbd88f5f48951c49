//go:build !nocuda

package matmul

import (
	"slices"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/autograd"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// Awkward shapes: size 1, odd sizes, sizes off every tile and vector width (rows that are not
// 16-byte aligned, a partial last tile in M, N and K), a single row or column, every depth K = 1..7
// (the thin-K step's), aligned rows with partial tiles and split K (200 x 100 x 300), and the
// smallest shapes the fast steps take.
var awkward = []Shape{{1, 1, 1}, {3, 5, 7}, {33, 17, 65}, {64, 64, 8}, {128, 128, 32}, {256, 384, 96}, {130, 258, 40},
	{255, 255, 255}, {129, 1, 1000}, {3, 4100, 5}, {4097, 64, 16}, {31, 97, 2}, {1, 300, 3}, {300, 1, 4}, {65, 129, 6},
	{200, 100, 300}, {1, 200, 100}}

// anyShapeBuilds are the any-shape step's build of every tile, its plan's slices of K for each.
func anyShapeBuilds() []Step {
	var out []Step
	for _, t := range Tiles {
		out = append(out, AnyShapeWith(t, 0))
	}
	return out
}

// Every step and variant, the any-shape step (with the tile its plan picks, and with every tile) and
// the thin-K step on every awkward shape it takes (every output checked, NaN-poisoned), with a
// refusal naming the limit on the others; the article's shape (sampled) and the non-square one in
// the long mode.
func TestStepsAreCorrect(t *testing.T) {
	env := labtest.Open(t)
	shapes := awkward
	if !testing.Short() {
		shapes = append(shapes, NonSquare, Article)
	}
	steps := append(append(append(append([]Step{}, Steps...), Variants[:len(Variants)-1]...), AnyShape, ThinK), anyShapeBuilds()...)
	for i, s := range shapes {
		p, err := NewCheckedProblem(env, s, uint64(40+i))
		if err != nil {
			t.Fatal(err)
		}
		checkSteps(t, p, steps)
		p.Free()
	}
}

// checkSteps checks each of steps that takes p's shape on p (NaN-poisoned output, the sampled
// elements against the float64 reference) and returns the names of those that ran; a step that
// refuses the shape must name the limit.
func checkSteps(t *testing.T, p *Problem, steps []Step) []string {
	t.Helper()
	s := p.Shape
	var ran []string
	for _, st := range steps {
		if err := st.Validate(s, p.env.Session.Device); err != nil {
			if !strings.ContainsAny(err.Error(), "%<") { // "M % 128 == 0", "K < 8"
				t.Errorf("%s refuses %v without naming the limit: %v", st.Name, s, err)
			}
			continue
		}
		res, err := p.Check(st, "")
		if err != nil {
			t.Fatalf("%s on %v: %v", st.Name, s, err)
		}
		ran = append(ran, st.Name)
		if st.Name == "8b 3xTF32, one accumulator" && s.K >= 4096 {
			// The truncation bias of one accumulator over 4096 terms: rel L2 within the bound,
			// a few elements outside it (the lesson shows this variant failing).
			if res.RelL2 > res.Tol.RelL2 {
				t.Errorf("%s on %v: rel L2 %.2e over %.2e", st.Name, s, res.RelL2, res.Tol.RelL2)
			}
			continue
		}
		if !res.OK {
			t.Errorf("%s on %v (%s): %v", st.Name, s, p.Sample.What, res.Err())
		}
	}
	return ran
}

// A kernel that leaves one column unwritten fails on the NaN-poisoned output; the hi-only product
// fails the float32 check.
func TestCheckCatchesWrongKernels(t *testing.T) {
	env := labtest.Open(t)
	p, err := NewCheckedProblem(env, Shape{M: 96, N: 80, K: 50}, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	src, _ := Fallback.Source("")
	lazy := strings.Replace(src.Code, "if (row < M && col < N) C[", "if (row < M && col < N - 1) C[", 1)
	if lazy == src.Code {
		t.Fatal("the edit did not apply")
	}
	res, err := p.Check(Fallback, lazy)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.NonFinite != 96 || res.FirstBad != 79 {
		t.Errorf("a kernel that skips the last column passed or was misreported: %+v", res)
	}
	q, err := NewCheckedProblem(env, Shape{M: 256, N: 256, K: 1024}, 9)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Free()
	run, _, _, err := q.Launcher(HiOnly, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := q.Output(run)
	if err != nil {
		t.Fatal(err)
	}
	if c := check.Compare(got, q.Want(), Tolerance("float32", 1024)); c.OK || c.RelL2 < 1e-4 {
		t.Errorf("the fp16 product passed the float32 check: %v", c)
	}
}

// A fast step refuses the non-square shape before any launch, naming its tile.
func TestFastStepsRefuseBeforeLaunch(t *testing.T) {
	env := labtest.Open(t)
	p, err := NewProblem(env, NonSquare, 1, 1, 1, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	st, _ := StepByName("7")
	if _, _, _, err := p.Launcher(st, ""); err == nil || !strings.Contains(err.Error(), "128 x 128 x 32 tile") {
		t.Errorf("step 7 on %v: %v", NonSquare, err)
	}
}

// Multiply takes any shape, picks the step by the shape and the inputs' range, and refuses bad input.
func TestMultiply(t *testing.T) {
	env := labtest.Open(t)
	for _, c := range []struct {
		s    Shape
		big  bool
		want string
	}{{Shape{M: 100, N: 300, K: 77}, false, AnyShape.Name}, {Shape{M: 256, N: 128, K: 48}, true, AnyShape.Name}, {Shape{M: 4097, N: 65, K: 9}, false, AnyShape.Name}, {Shape{M: 513, N: 129, K: 1025}, false, AnyShape.Name}, {Shape{M: 4097, N: 65, K: 1}, false, ThinK.Name}, {Shape{M: 1, N: 300, K: 7}, false, ThinK.Name}, {Shape{M: 300, N: 1, K: 3}, false, ThinK.Name}, {Shape{M: 256, N: 256, K: 64}, false, "9 fp16x3 split"}, {Shape{M: 256, N: 256, K: 64}, true, "8b 3xTF32 split"}} {
		checkMultiply(t, env, c.s, c.big, c.want)
	}
	if _, _, err := Multiply(env, make([]float32, 6), 2, 3, make([]float32, 8), 4, 2); err == nil || !strings.Contains(err.Error(), "inner dimensions") {
		t.Errorf("mismatched inner dimensions: %v", err)
	}
	if _, _, err := Multiply(env, nil, 0, 3, make([]float32, 6), 3, 2); err == nil || !strings.Contains(err.Error(), "at least 1") {
		t.Errorf("M = 0: %v", err)
	}
}

// checkMultiply multiplies inputs of shape s with Multiply (one of A's values 1e12 when big is true:
// its row spans more binades than the fp16 split keeps, so the 3xTF32 split takes it), fails t
// unless it used the step named want, and checks every output (s is small) or a sample of them
// against the float64 reference.
func checkMultiply(t *testing.T, env *lab.Env, s Shape, big bool, want string) {
	t.Helper()
	a, b := Inputs(s, 3)
	if big {
		a[5] = 1e12 // about 40 binades over its row's smallest entries: past the fp16 split's 28
	}
	got, st, err := Multiply(env, a, s.M, s.K, b, s.K, s.N)
	if err != nil {
		t.Fatalf("%v: %v", s, err)
	}
	if st.Name != want {
		t.Errorf("%v: used %s, want %s", s, st.Name, want)
	}
	idx := SampleOf(s, 0, 0, 0, 1).Idx
	if r := check.Compare(Gather(got, idx), Reference(s, a, b, idx), st.Tol(s.K)); !r.OK {
		t.Errorf("%v with %s: %v", s, st.Name, r.Err())
	}
}

// The GPU autograd op (Multiply forward and backward, any shape) passes the gradient check on a
// shape only the fallback takes and on one the split step takes.
func TestAutogradOpOnGPU(t *testing.T) {
	env := labtest.Open(t)
	for _, s := range []Shape{{33, 17, 65}, {128, 128, 32}} {
		checkGrad(t, env, s)
	}
}

// checkGrad gradient-checks the GPU autograd op on shape s.
func checkGrad(t *testing.T, env *lab.Env, s Shape) {
	t.Helper()
	res, err := GradCheck(GPUOp(env), s, 12)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Errorf("%v: %v", s, err)
	}
}

// Every exercise's solution passes its check; every untouched starter fails it.
func TestExercises(t *testing.T) {
	env := labtest.Open(t)
	for _, x := range Exercises {
		sol, err := x.Solution()
		if err != nil {
			t.Fatal(err)
		}
		r, err := x.Check(env, sol)
		if err != nil || !r.Passed || !r.Ran || r.Mine.Median <= 0 || r.Ref.Median <= 0 {
			t.Errorf("exercise %d solution: %+v, %v", x.Number, r, err)
		}
		r, err = x.Check(env, x.Starter)
		if err != nil || r.Passed {
			t.Errorf("exercise %d starter passed: %+v, %v", x.Number, r, err)
		}
	}
}

// KernelBench's check lets the fp16 product through; ours does not; every step passes both.
func TestKernelBenchTrials(t *testing.T) {
	if testing.Short() {
		t.Skip("a float64 reference of every output of 1024^3")
	}
	env := labtest.Open(t)
	rs, err := KernelBench(env, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		switch r.Step.Name {
		case HiOnly.Name, Zeros.Name:
			if r.KBPassed[1] != 1 || r.OursPassed != 0 {
				t.Errorf("%s: KernelBench at scale 0.01 %d, ours %d (want 1, 0)", r.Step.Name, r.KBPassed[1], r.OursPassed)
			}
		default:
			if r.OursPassed != 1 || r.KBPassed[1] != 1 || (r.Step.DType != "tf32" && r.KBPassed[0] != 1) {
				t.Errorf("%s: KernelBench %v, ours %d (rel L2 %.1e)", r.Step.Name, r.KBPassed, r.OursPassed, r.WorstRelL2)
			}
		}
	}
}

// The any-shape step with its padding forced on small shapes (Multiply pads only products of
// PadMinMACs and more): A, B and C copied to aligned, zero-padded rows and back, with and without
// split K, every output checked on NaN-poisoned buffers.
func TestAnyShapePadded(t *testing.T) {
	env := labtest.Open(t)
	for i, s := range []Shape{{67, 45, 33}, {255, 255, 255}, {3, 4100, 5}, {129, 1, 1000}, {64, 63, 64}} {
		checkPadded(t, env, s, uint64(300+i))
	}
}

// Every tile of the any-shape step with K cut into a fixed number of slices (3, and 7 where K has
// that many k tiles), on shapes with partial tiles, aligned and unaligned rows, and one k tile
// fewer than a slice: the workspace's slices added up by the last block of each tile, every output
// checked on a NaN-poisoned C.
func TestAnyShapeTileSplits(t *testing.T) {
	env := labtest.Open(t)
	for i, s := range []Shape{{255, 255, 255}, {200, 100, 300}, {67, 45, 133}, {1, 70, 97}, {130, 1, 64}} {
		p, err := NewCheckedProblem(env, s, uint64(320+i))
		if err != nil {
			t.Fatal(err)
		}
		var steps []Step
		for _, tile := range Tiles {
			steps = append(steps, AnyShapeWith(tile, 3), AnyShapeWith(tile, 7))
		}
		if ran := checkSteps(t, p, steps); len(ran) != len(steps) {
			t.Errorf("%v: %d of %d builds ran", s, len(ran), len(steps))
		}
		p.Free()
	}
}

// Split K run twice in a row on the same problem (and its workspace), through the workspace and,
// on compute capability 9.0, in clusters, on shapes whose tiles hang past every edge, with rows
// aligned and not, a slice that is one k tile short, and the plan's slices: every output right
// both times, and both results equal bit for bit (the slices are added in order).
func TestAnyShapeSplitKTwice(t *testing.T) {
	env := labtest.Open(t)
	for i, s := range []Shape{{255, 255, 255}, {513, 129, 1025}, {67, 45, 133}, {200, 100, 300}, {130, 1, 64}} {
		checkSplitKTwice(t, env, s, uint64(340+i))
	}
}

// checkSplitKTwice runs the any-shape step as its plan splits s (when it does), with 64 x 128 and
// 64 x 32 tiles in fixed slices through the workspace and, on compute capability 9.0, 64 x 64 and
// 64 x 32 tiles in clusters of 2, 4 and 8, each twice in a row on one problem, NaN-poisoned before
// each run: every output checked, the two results equal bit for bit.
func checkSplitKTwice(t *testing.T, env *lab.Env, s Shape, seed uint64) {
	t.Helper()
	p, err := NewCheckedProblem(env, s, seed)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	steps := []Step{AnyShape, AnyShapeWith(Tile{64, 128}, 5), AnyShapeWith(Tile{64, 32}, 7)}
	if env.Device().CC() >= 90 {
		steps = append(steps, AnyShapeClustered(Tile{64, 64}, 2), AnyShapeClustered(Tile{64, 32}, 4), AnyShapeClustered(Tile{64, 64}, 8))
	}
	for _, st := range steps {
		cfg, err := st.For(s, env.Device()).Plan(s, env.Device())
		if err != nil || cfg.Grid.Z < 2 {
			if st.Name == AnyShape.Name {
				continue // the plan does not split this shape: the fixed splits below do
			}
			t.Fatalf("%s on %v: %+v, %v", st.Name, s, cfg, err)
		}
		run, _, _, err := p.Launcher(st, "")
		if err != nil {
			t.Fatal(err)
		}
		var first []float32
		for n := 1; n <= 2; n++ {
			got, err := p.Output(run)
			if err != nil {
				t.Fatalf("%s on %v, run %d: %v", st.Name, s, n, err)
			}
			if r := check.Compare(got, p.Want(), st.Tol(s.K)); !r.OK {
				t.Errorf("%s on %v, run %d of 2 (%d slices): %v", st.Name, s, n, cfg.Grid.Z, r.Err())
			}
			c, err := p.Cd.ToHost()
			if err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				first = c
			} else if !slices.Equal(first, c) {
				t.Errorf("%s on %v: the two runs differ: the slices were not added in the same order", st.Name, s)
			}
		}
	}
}

// checkPadded checks the any-shape step on s with its padding forced.
func checkPadded(t *testing.T, env *lab.Env, s Shape, seed uint64) {
	t.Helper()
	p, err := NewCheckedProblem(env, s, seed)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	p.padAlways = true
	if ran := checkSteps(t, p, []Step{AnyShape}); len(ran) != 1 {
		t.Errorf("%v: the any-shape step did not run", s)
	}
}

// Multiply on the hostile products (HostileInputs) at the shape where the split runs: each runs
// the step Choose names, of the kind the input is built for, and every element is within the
// rounding model's bound of the float64 product (ElementBound), with IEEE's Inf and NaN where the
// float64 product rounded to float32 has them.
func TestMultiplyHostile(t *testing.T) {
	env := labtest.Open(t)
	s := Shape{M: 256, N: 384, K: 160}
	for _, h := range HostileInputs(s, 11) {
		ch := Choose(s, env.Session.Device, h.A, h.B)
		got, st, err := Multiply(env, h.A, s.M, s.K, h.B, s.K, s.N)
		if err != nil {
			t.Fatalf("%s: %v", h.Name, err)
		}
		t.Logf("%s: %s (%s)", h.Name, st.Name, ch.Why)
		if st.Name != ch.Step.Name || (env.Session.Device.CC() >= 80 && st.DType != h.Takes) {
			t.Errorf("%s: ran %s (%s), Choose says %s, built for a %s step", h.Name, st.Name, st.DType, ch.Step.Name, h.Takes)
		}
		if bad, first := CompareBound(s, h.A, h.B, got, st.DType); bad > 0 {
			t.Errorf("%s with %s: %d of %d elements out of bounds; first %s", h.Name, st.Name, bad, len(got), first)
		}
	}
}

// The GPU autograd op on the hostile products, forward and backward: dA = dC·Bᵀ and dB = Aᵀ·dC are
// products of hostile operands too, so each is checked like C, against the float64 product under
// the bound of the step Choose picks for its own operands.
func TestAutogradOpHostile(t *testing.T) {
	env := labtest.Open(t)
	s := Shape{M: 256, N: 384, K: 160}
	op, d := GPUOp(env), env.Session.Device
	for i, h := range HostileInputs(s, 17) {
		dc, _ := Inputs(Shape{M: s.M, N: s.N, K: s.N}, uint64(40+i)) // dC (M x N), uniform in [-1, 1)
		dc = dc[:s.M*s.N]
		a := autograd.Param("A", float64s(h.A), s.M, s.K)
		b := autograd.Param("B", float64s(h.B), s.K, s.N)
		tp := autograd.NewTape()
		c, err := tp.Apply(op, a, b)
		if err != nil {
			t.Fatalf("%s: %v", h.Name, err)
		}
		if err := tp.BackwardWith(c, autograd.New("dC", float64s(dc), s.M, s.N)); err != nil {
			t.Fatalf("%s: %v", h.Name, err)
		}
		bt, at := transpose(h.B, s.K, s.N), transpose(h.A, s.M, s.K)
		for _, g := range []struct {
			name string
			grad *autograd.Tensor
			s    Shape
			x, y []float32
		}{{"C", c, s, h.A, h.B}, {"dA", a.Grad, Shape{M: s.M, N: s.K, K: s.N}, dc, bt}, {"dB", b.Grad, Shape{M: s.K, N: s.N, K: s.M}, at, dc}} {
			got, err := float32s(g.grad)
			if err != nil {
				t.Fatal(err)
			}
			st := Choose(g.s, d, g.x, g.y).Step
			if bad, first := CompareBound(g.s, g.x, g.y, got, st.DType); bad > 0 {
				t.Errorf("%s, %s with %s: %d of %d elements out of bounds; first %s", h.Name, g.name, st.Name, bad, len(got), first)
			}
		}
		tp.Free()
	}
}

//go:build !nocuda

package rwkv

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/autograd"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	kr "github.com/cudalessons/cudalessons/kernels/rwkv"
)

// sanitizeForward are the forward shapes of TestSanitize, each step running on those its plan takes:
// a single element; B and T odd (every tile partial); B over 32 by one (v5's second row group has one
// row); T % 8 == 0 but off 32 with two batch groups a channel (v2, v3, v4); T over 256 and odd (the
// general step's second, partial chunk; v5's warps take more than one tile pair); and two shapes the
// tensor cores take: T = 224 (v8's 32-wide tiles, 7 of them for 6 consumer warps; two row blocks a
// channel) and T = 128 (v8's 64-wide tiles); and T at the 1024 limit (the static shared rows full).
var sanitizeForward = []Shape{{1, 1, 1}, {3, 5, 37}, {33, 2, 17}, {16, 3, 40}, {3, 2, 301}, {64, 2, 224}, {32, 3, 128}, {8, 1, 1024}}

// sanitizeBackward are the backward shapes: a single element (one partial: dw written directly); B
// and T odd; B over 16 by one (bwd v4's second row block, and its reduce); B even with T % 4 == 0,
// off the padded 128 (bwd v2 and v3, with the reduce of 9 group partials); T over 256 and odd; and
// T at the 1024 limit.
var sanitizeBackward = []Shape{{1, 1, 1}, {3, 5, 37}, {17, 3, 129}, {18, 2, 132}, {3, 2, 301}, {8, 1, 1024}}

// misalignedShape is where the steps whose kernels only make scalar global accesses (v0, v1 and the
// general forward; bwd v0, v1, v4 and the general backward) run on views that start one float past an
// aligned address. The other kernels load float4s, cp.async 16 bytes or store WMMA tiles: their rows
// must be 16-byte aligned, which a Problem's own buffers are.
var misalignedShape = Shape{B: 3, C: 2, T: 301}

// TestSanitize launches every kernel of kernels/rwkv on small awkward shapes, for the
// compute-sanitizer pass (memcheck, racecheck and synccheck), checking every result against the
// float64 reference on NaN-poisoned outputs: every forward step and v5 at each of its tile sizes,
// and the general forward; every backward step and the general backward, each file's reduce included
// (each step runs on a shape with more than one dw partial; all but bwd v2 and v3 also on one with a
// single partial, written straight to dw); the exercises' solutions
// (compiled from solutions/ under their own names) on the exercises' small shapes; the scalar
// kernels on views at offset 1; the op the FP32 dispatch builds on two shapes, and the general steps
// as an op, through the training loss (dk and dw on every element) and a gradcheck of a few
// elements; and the op of the TF32 dispatch (a tensor-core forward) once forward and backward. The
// launches are small (racecheck slows one 100-1000x): a few dozen blocks, at most 128 one-row blocks
// of the naive kernels, with partial tiles, odd sizes and more than one block a channel. No step is
// timed, and the exercises' own checks (which time at the article's shape) are not called.
func TestSanitize(t *testing.T) {
	env := labtest.Open(t)
	ran := map[string]bool{}
	mark := func(names []string) {
		for _, n := range names {
			ran[n] = true
		}
	}
	for i, s := range sanitizeForward {
		p, err := NewProblem(env, s, uint64(500+i), 0)
		if err != nil {
			t.Fatal(err)
		}
		mark(checkForwardSteps(t, p, forwardVariants()))
		p.Free()
	}
	for i, s := range sanitizeBackward {
		p, err := NewBackwardProblem(env, s, uint64(550+i), 0)
		if err != nil {
			t.Fatal(err)
		}
		mark(checkBackwardSteps(t, p, backwardVariants()))
		p.Free()
	}

	// The exercises' solutions, launched as the exercises launch the reader's kernel.
	var exercises []Step
	for i, x := range []exerciseCheck{exercise1, exercise2} {
		st := x.Step
		st.File = x.Solution
		exercises = append(exercises, st)
		for j, s := range x.Shapes {
			p, err := NewProblem(env, s, uint64(600+10*i+j), 0)
			if err != nil {
				t.Fatal(err)
			}
			mark(checkForwardSteps(t, p, []Step{st}))
			p.Free()
		}
	}

	// The scalar kernels on misaligned views.
	fp, err := NewProblem(env, misalignedShape, 650, 0)
	if err != nil {
		t.Fatal(err)
	}
	restore := misalign(t, env, &fp.Wd, &fp.Kd, &fp.Out)
	checkForwardSteps(t, fp, []Step{mustStep("v0"), mustStep("v1"), GeneralStep})
	restore()
	fp.Free()
	bp, err := NewBackwardProblem(env, misalignedShape, 651, 0)
	if err != nil {
		t.Fatal(err)
	}
	restore = misalign(t, env, &bp.Wd, &bp.Kd, &bp.Gd, &bp.DK, &bp.DW)
	checkBackwardSteps(t, bp, []BackwardStep{mustBackward("bwd v0"), mustBackward("bwd v1"), mustBackward("bwd v4"), GeneralBackward})
	restore()
	bp.Free()

	// The op: the FP32 dispatch's choice (v5 with bwd v4 on one and two row blocks), the general
	// steps, the TF32 dispatch's tensor-core forward, and v4 on views one float in (aligned copies).
	for i, s := range []Shape{{3, 5, 37}, {17, 3, 129}} {
		if c, ok := choose(t, env, s, FP32); ok {
			checkOp(t, env, s, c.Fwd, c.Bwd, uint64(700+i), 8)
		}
	}
	checkOp(t, env, misalignedShape, GeneralStep, GeneralBackward, 710, 8)
	checkTF32Op(t, env, Shape{B: 64, C: 2, T: 224}, 720)
	views := Shape{B: 16, C: 3, T: 40}
	if c, ok := choose(t, env, views, FP32); ok {
		checkOpOnViews(t, env, views, c.Fwd, c.Bwd, 730)
	}

	for _, st := range append(forwardVariants(), exercises...) {
		if !ran[st.Name] {
			t.Errorf("%s never ran", st.Name)
		}
	}
	for _, st := range backwardVariants() {
		if !ran[st.Name] {
			t.Errorf("%s never ran", st.Name)
		}
	}
	labtest.LaunchedEvery(t, kr.Kernels, env)
}

// misalign points each buffer at a copy of its contents one element into a fresh buffer one element
// longer: a view 4 bytes past an aligned address, as a view into a larger tensor gives. restore
// frees the copies and puts the originals back.
func misalign(t *testing.T, env *lab.Env, bufs ...**gpu.Buffer[float32]) (restore func()) {
	t.Helper()
	var orig, owners []*gpu.Buffer[float32]
	restore = func() {
		for i, o := range owners {
			*bufs[i] = orig[i]
			o.Free()
		}
	}
	for _, b := range bufs {
		n := (*b).Len()
		owner, err := gpu.Alloc[float32](env.Session, n+1)
		if err != nil {
			restore()
			t.Fatal(err)
		}
		view, err := owner.View(1, n)
		if err == nil {
			err = view.CopyFrom(*b)
		}
		if err != nil {
			owner.Free()
			restore()
			t.Fatal(err)
		}
		orig, owners = append(orig, *b), append(owners, owner)
		*b = view
	}
	return restore
}

// checkTF32Op builds the op of the TF32 dispatch on s, which must pick a tensor-core forward, and
// runs it once forward and backward on the tape with the loss sum(out): out against the float64
// forward under the step's tolerance, and dw and dk, whose upstream gradient is all ones (so the
// forward's TF32 rounding does not reach them), against the float64 backward on every element.
func checkTF32Op(t *testing.T, env *lab.Env, s Shape, seed uint64) {
	t.Helper()
	op, c, err := NewOp(env, s, TF32)
	if err != nil {
		t.Errorf("tf32 op on %v: %v", s, err)
		return
	}
	defer op.Free()
	t.Logf("tf32: %s", c)
	if c.Fwd.DType == "float32" {
		t.Errorf("tf32 op on %v: the dispatch chose %s, not a tensor-core step", s, c.Fwd.Name)
	}
	w, k := InputTensors(s, seed)
	defer w.Free()
	defer k.Free()
	tp := autograd.NewTape()
	defer tp.Free()
	out, err := tp.Apply(op, w, k)
	if err != nil {
		t.Errorf("tf32 op on %v: %v", s, err)
		return
	}
	loss, err := tp.Apply(autograd.Sum, out)
	if err == nil {
		err = tp.Backward(loss)
	}
	if err != nil {
		t.Errorf("tf32 op on %v: %v", s, err)
		return
	}
	defer w.Grad.Free()
	defer k.Grad.Free()
	wv, kv := mustValues(w), mustValues(k)
	ones := make([]float64, s.Len())
	for i := range ones {
		ones[i] = 1
	}
	for _, r := range []struct {
		name string
		got  *autograd.Tensor
		want []float64
		tol  check.Tolerance
	}{
		{"out", out, Forward(s, wv, kv, Eps), c.Fwd.Tol},
		{"dk", k.Grad, BackwardDK(s, wv, ones), DKTolerance},
		{"dw", w.Grad, BackwardDW(s, kv, ones), DWTolerance},
	} {
		got, err := r.got.Values()
		if err != nil {
			t.Errorf("tf32 op on %v: %s: %v", s, r.name, err)
			continue
		}
		if res := check.Compare(got, r.want, r.tol); !res.OK {
			t.Errorf("tf32 op (%s / %s) on %v: %s: %v", c.Fwd.Name, c.Bwd.Name, s, r.name, res.Err())
		}
	}
}

//go:build !nocuda

package giou

import (
	"math"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// Awkward batches: one slot, odd sizes, M under and over the block, M over the article's limit,
// every image empty, and the article's shape (in full mode).
func awkward(short bool) []Shape {
	s := []Shape{{1, 1}, {3, 5}, {7, 33}, {65, 64}, {2, 300}, {130, 256}, {MaxGrid + 5, 3}, {8*MaxGrid + 3, 2}}
	if !short {
		s = append(s, ArticleShape, Shape{B: 5000, M: 40})
	}
	return s
}

// Every step on fresh batches and NaN-poisoned outputs against the float64 reference, with aligned
// and misaligned (one float off) buffers; the article's steps refuse M > 1024 before any launch.
func TestStepsOnAwkwardBatches(t *testing.T) {
	env := labtest.Open(t)
	for i, s := range awkward(testing.Short()) {
		checkSteps(t, env, Generate(s, uint64(100+i)))
	}
	bt := Generate(Shape{B: 2, M: 1025}, 1)
	p, err := NewProblem(env, bt, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	if _, _, err := p.Check(Steps[0], ""); err == nil {
		t.Error("the article's step took M = 1025")
	}
}

// checkSteps checks every step on bt against the float64 reference, on NaN-poisoned outputs, with
// aligned and misaligned (one float off) buffers; misaligned, steps 3-6 must take their scalar-load
// (_any) kernel.
func checkSteps(t *testing.T, env *lab.Env, bt *Batch) {
	t.Helper()
	for _, offset := range []int{0, 1} {
		p, err := NewProblem(env, bt, offset)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range Steps {
			res, l, err := p.Check(st, "")
			if err != nil {
				p.Free()
				t.Fatalf("%s %v offset %d: %v", st.Name, bt.Shape, offset, err)
			}
			if !res.OK() {
				t.Errorf("%s %v offset %d (%s): %v", st.Name, bt.Shape, offset, l, res.Err())
			}
			if offset == 1 && st.Name[0] >= '3' && l.Kernels[0].Name == st.Kernel {
				t.Errorf("%s %v: misaligned buffers got the vector kernel %s", st.Name, bt.Shape, st.Kernel)
			}
		}
		p.Free()
	}
}

// Degenerate batches: every image empty (loss 0, gradient 0), B = 0, zero-area and identical boxes.
func TestDegenerateBatches(t *testing.T) {
	env := labtest.Open(t)
	empty := Generate(Shape{B: 9, M: 4}, 3)
	for i := range empty.Counts {
		empty.Counts[i] = 0
	}
	clear(empty.Target)
	degenerate := &Batch{Shape: Shape{B: 2, M: 3}, Counts: []int32{3, 2},
		Pred:   []float32{1, 1, 4, 5, 2, 2, 2, 2, 6, 6, 3, 3, 0, 0, 1, 1, 4, 4, 4, 9, 0, 0, 0, 0},
		Target: []float32{1, 1, 4, 5, 1, 1, 3, 3, 1, 1, 5, 5, 0, 0, 1, 1, 4, 4, 4, 9, 0, 0, 0, 0}}
	for _, bt := range []*Batch{empty, Generate(Shape{B: 0, M: 8}, 1), degenerate} {
		p, err := NewProblem(env, bt, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range Steps {
			res, _, err := p.Check(st, "")
			if err != nil || !res.OK() {
				t.Errorf("%s %v: %v %v", st.Name, bt.Shape, res, err)
			}
		}
		p.Free()
	}
}

// The same batch gives the same loss bits on every launch (the last-block mean is deterministic).
func TestDeterministic(t *testing.T) {
	env := labtest.Open(t)
	p, err := NewProblem(env, Generate(Shape{B: 4096, M: 64}, 9), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	for _, name := range []string{"3 block mean", "5 fused fwd+bwd", "6 warp per image", "6 warp fwd+bwd"} {
		st := mustStep(name)
		var first float64
		for i := range 20 {
			res, _, err := p.Check(st, "")
			if err != nil || !res.OK() {
				t.Fatalf("%s: %v %v", name, res, err)
			}
			if i == 0 {
				first = res.Got
			} else if res.Got != first {
				t.Fatalf("%s: launch %d gave %v, the first %v", name, i, res.Got, first)
			}
		}
	}
}

// The GPU op: gradcheck on every element of the small batches, and the op against the reference on
// awkward batches with aligned and misaligned pred.
func TestGPUOp(t *testing.T) {
	env := labtest.Open(t)
	for i, s := range GradCheckShapes {
		res, err := GradCheckGPU(env, s, uint64(60+i))
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK {
			t.Errorf("%v: %v: %v", s, res, res.Err())
		}
	}
	for i, s := range append(awkward(testing.Short()), Shape{0, 3}, Shape{4, 0}) {
		for _, off := range []int{0, 1} {
			r, err := OpCheck(env, Generate(s, uint64(70+i)), off)
			if err != nil {
				t.Fatalf("%v: %v", s, err)
			}
			if !r.OK() {
				t.Errorf("offset %d: %v", off, r)
			}
		}
	}
}

// Every exercise: the solution passes (and is timed at the article's workload in full mode), the
// untouched starter fails.
func TestExercisesOnGPU(t *testing.T) {
	checkExercises(t, labtest.Open(t), !testing.Short())
}

// checkExercises checks every exercise's solution (it must pass) and untouched starter (it must
// fail) on the exercise batches, and with article also on the article's workload, where the solution
// is timed.
func checkExercises(t *testing.T, env *lab.Env, article bool) {
	t.Helper()
	exArticle = article
	defer func() { exArticle = true }()
	for _, x := range Exercises {
		sol, err := x.Solution()
		if err != nil {
			t.Fatal(err)
		}
		r, err := x.Check(env, sol)
		if err != nil || !r.Passed || !r.Ran {
			t.Errorf("exercise %d solution: %+v %v", x.Number, r.Reason, err)
		}
		if article && r.Speedup() <= 0 {
			t.Errorf("exercise %d solution: not timed", x.Number)
		}
		r, err = x.Check(env, x.Starter)
		if err != nil || r.Passed {
			t.Errorf("exercise %d starter: passed=%v %v (%s)", x.Number, r.Passed, err, r.Reason)
		}
	}
}

// Under KERNELS_EMULATE=t4 the quick run skips exactly the steps the T4 refuses (no launch, no
// time) and records each as refused.
func TestRunEmulatedT4(t *testing.T) {
	_, run := labtest.RunEmulated(t, Lesson, "t4")
	bf16 := false
	for _, r := range run.Records {
		bf16 = bf16 || (r.Variant == "4 bfloat16" && r.MedianMS > 0 && r.Correct)
	}
	if !bf16 {
		t.Error("the bfloat16 step (compiled for compute_75) was not measured correct on the emulated T4")
	}
}

// Boxes far apart (issue 23): every step that writes a gradient, and the op, on FarApart, judged by
// GradTolerance's floor (the fixed FP32 bound failed correct kernels there: 4.2e-5 relative L2,
// max 6e-11 absolute on gradients near 1e-6).
func TestGradFarApart(t *testing.T) {
	env := labtest.Open(t)
	bt := FarApart()
	p, err := NewProblem(env, bt, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	for _, st := range Steps {
		res, _, err := p.Check(st, "")
		if err != nil {
			t.Fatalf("%s: %v", st.Name, err)
		}
		t.Logf("%s: %v", st.Name, res)
		if !res.OK() {
			t.Errorf("%s far apart: %v", st.Name, res)
		}
	}
	r, err := OpCheck(env, bt, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		t.Errorf("op far apart: %v", r)
	}
}

// Padded prediction slots hold whatever the model wrote (issue 23): poisoned with NaN, +Inf and -Inf,
// every step but the article's first (which multiplies by its mask: NaN x 0 is NaN) and the op
// still give the loss and gradient of the valid boxes.
func TestPaddedSlotsIgnored(t *testing.T) {
	env := labtest.Open(t)
	bt := Generate(Shape{B: 64, M: 32}, 23)
	poison := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	for b, c := range bt.Counts {
		for j := int(c); j < bt.M; j++ {
			for k := range 4 {
				bt.Pred[(b*bt.M+j)*4+k] = poison[(j+k)%3]
			}
		}
	}
	p, err := NewProblem(env, bt, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	for _, st := range Steps {
		res, _, err := p.Check(st, "")
		if err != nil {
			t.Fatalf("%s: %v", st.Name, err)
		}
		if st.Name == "1 article" {
			if !math.IsNaN(res.Got) {
				t.Errorf("the article's step 1 gave %v on poisoned padding: the notebook says NaN", res.Got)
			}
			continue
		}
		if !res.OK() || math.IsNaN(res.Got) {
			t.Errorf("%s with NaN/Inf in padded slots: %v", st.Name, res)
		}
	}
	for _, off := range []int{0, 1} {
		r, err := OpCheck(env, bt, off)
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK() {
			t.Errorf("op (offset %d) with NaN/Inf in padded slots: %v", off, r)
		}
	}
}

// Huge but finite predicted boxes (issue 23): a valid prediction at 1e20 (area 1e40, past float32's
// range) gave a NaN loss on every step and the op. Steps 3-6 (but half, which cannot hold 1e20) and
// the op now compute it in a scaled frame: finite, and within the float32 check of the float64 loss
// and gradient. The article's steps are left as the article wrote them.
func TestHugeBoxes(t *testing.T) {
	env := labtest.Open(t)
	bt, err := HugeBoxes()
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProblem(env, bt, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	for _, st := range Steps {
		if st.Name[0] < '3' || st.DType == F16 {
			continue
		}
		res, _, err := p.Check(st, "")
		if err != nil {
			t.Fatalf("%s: %v", st.Name, err)
		}
		t.Logf("%s: loss %v (want %v)", st.Name, res.Got, res.Want)
		if !res.OK() || math.IsNaN(res.Got) || math.IsInf(res.Got, 0) {
			t.Errorf("%s with boxes at 1e20: %v", st.Name, res)
		}
	}
	r, err := OpCheck(env, bt, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		t.Errorf("op with boxes at 1e20: %v", r)
	}
}

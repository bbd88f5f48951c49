//go:build !nocuda

package rwkv

import (
	"math"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// bwdAwkward: a single element, T not a multiple of 4 or of the tile, B odd and over 16 and 32 (the
// register tile's row blocks), T at the 1024 limit and just over a padded tile, and one over the limit.
var bwdAwkward = []Shape{
	{1, 1, 1}, {3, 5, 37}, {2, 3, 1024}, {8, 3, 40}, {16, 7, 100}, {33, 2, 17}, {4, 2, 128},
	{17, 3, 129}, {34, 2, 1024}, {40, 3, 1100},
}

// Every backward step on fresh random inputs and NaN-poisoned dk, dw and scratch against the
// float64 reference on every element; shapes a step cannot take must be refused before launch.
func TestBackwardStepsOnAwkwardShapes(t *testing.T) {
	env := labtest.Open(t)
	for i, s := range bwdAwkward {
		if s.T > TMax { // every step refuses it; no problem is even allocated
			for _, st := range BackwardSteps {
				if err := st.Validate(s, env.Session.Device); err == nil {
					t.Errorf("%s accepted %v, over T <= %d", st.Name, s, TMax)
				}
			}
			continue
		}
		p, err := NewBackwardProblem(env, s, uint64(300+i), 0)
		if err != nil {
			t.Fatal(err)
		}
		checkBackwardSteps(t, p, backwardVariants())
		p.Free()
	}
}

// backwardVariants is every backward step: the ladder and the general step.
func backwardVariants() []BackwardStep {
	return append(append([]BackwardStep{}, BackwardSteps...), GeneralBackward)
}

// checkBackwardSteps checks each of steps that takes p's shape on p (one run on NaN-poisoned dk, dw
// and scratch against the float64 reference on the checked elements) and fails t on an error or a
// wrong answer; it returns the names of the steps that ran.
func checkBackwardSteps(t *testing.T, p *BackwardProblem, steps []BackwardStep) (ran []string) {
	t.Helper()
	s := p.Shape
	for _, st := range steps {
		if err := st.Validate(s, p.env.Session.Device); err != nil {
			t.Logf("%s refuses %v: %v", st.Name, s, err)
			continue
		}
		ran = append(ran, st.Name)
		res, err := p.Check(st)
		if err != nil {
			t.Errorf("%s on %v: %v", st.Name, s, err)
			continue
		}
		if !res.OK() {
			t.Errorf("%s on %v: %v\n%s", st.Name, s, res.Err(), res)
		}
	}
	return ran
}

// At the article's shape, on sampled rows and channels, each step checked and timed (times logged).
func TestBackwardStepsAtArticleShape(t *testing.T) {
	env := labtest.Open(t)
	p, err := NewBackwardProblem(env, ArticleShape, 77, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	var first float64
	for _, st := range BackwardSteps {
		rec, err := p.Measure(st)
		if err != nil {
			t.Errorf("%s: %v", st.Name, err)
			continue
		}
		if first == 0 {
			first = rec.MedianMS
		}
		t.Logf("%-22s %8.3f ms  %6.2f TFLOP/s (%4.1f%% of peak)  %5.1fx over bwd v0  rel L2 %.1e", st.Name, rec.MedianMS, rec.GFLOPs/1e3, rec.PctFLOPs, first/rec.MedianMS, rec.RelL2)
	}
	t.Logf("target: dk+dw <= 1.65 ms (20x PyTorch's backward of about 33 ms on the H100)")
}

// The fastest backward's dw is the same bit for bit on every run (no atomics), and so is dk.
func TestBackwardDeterministic(t *testing.T) {
	env := labtest.Open(t)
	p, err := NewBackwardProblem(env, Shape{B: 48, C: 4, T: 256}, 5, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	run, b, err := p.Launcher(FastestBackward())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	var prevDW, prevDK []float32
	for i := 0; i < 3; i++ {
		if err := run(); err != nil {
			t.Fatal(err)
		}
		dw, err := p.DW.ToHost()
		if err != nil {
			t.Fatal(err)
		}
		dk, err := p.DK.ToHost()
		if err != nil {
			t.Fatal(err)
		}
		for j := range prevDW {
			if math.Float32bits(dw[j]) != math.Float32bits(prevDW[j]) {
				t.Fatalf("run %d: dw[%d] = %v, the run before gave %v", i, j, dw[j], prevDW[j])
			}
		}
		for j := range prevDK {
			if math.Float32bits(dk[j]) != math.Float32bits(prevDK[j]) {
				t.Fatalf("run %d: dk[%d] = %v, the run before gave %v", i, j, dk[j], prevDK[j])
			}
		}
		prevDW, prevDK = dw, dk
	}
}

// The finite-difference gradient check of every backward step (with the naive forward) through the
// training loss, on every element of w and k of the small shapes.
func TestGradCheckGPU(t *testing.T) {
	env := labtest.Open(t)
	for _, st := range BackwardSteps {
		for _, s := range GradCheckShapes {
			if err := st.Validate(s, env.Session.Device); err != nil {
				continue
			}
			res, err := GradCheckGPU(env, s, Steps[0], st, 21, 0)
			if err != nil {
				t.Errorf("%s on %v: %v", st.Name, s, err)
				continue
			}
			if !res.OK {
				t.Errorf("%s on %v: %v: %v", st.Name, s, res, res.Err())
			}
		}
	}
}

// fastestForward is the last float32 forward step that takes s.
func fastestForward(t *testing.T, env *lab.Env, s Shape) Step {
	t.Helper()
	for i := len(Steps) - 1; i >= 0; i-- {
		if Steps[i].DType == "float32" && Steps[i].Validate(s, env.Session.Device) == nil {
			return Steps[i]
		}
	}
	t.Fatalf("no float32 forward step takes %v", s)
	return Step{}
}

// The original's training loss through the GPU op: the loss against the float64 one on a small
// shape, dw and dk against the reference chain there and at the article's shape (sampled).
func TestAutogradTrainingLoss(t *testing.T) {
	env := labtest.Open(t)
	small := Shape{B: 3, C: 5, T: 40}
	for _, st := range BackwardSteps {
		if st.Validate(small, env.Session.Device) != nil {
			continue
		}
		res, err := AutogradCheck(env, small, Steps[0], st, 8, 0)
		if err != nil {
			t.Fatalf("%s: %v", st.Name, err)
		}
		if !res.OK() {
			t.Errorf("%s: %s", st.Name, res)
		}
		if d := math.Abs(res.Loss-res.LossRef) / math.Abs(res.LossRef); !(d < 1e-5) {
			t.Errorf("%s: loss %v, float64 %v (relative %.1e)", st.Name, res.Loss, res.LossRef, d)
		}
	}
	fwd := fastestForward(t, env, ArticleShape)
	res, err := AutogradCheck(env, ArticleShape, fwd, FastestBackward(), ArticleSeed, 48)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s + %s:\n%s", fwd.Name, FastestBackward().Name, res)
	if !res.OK() {
		t.Errorf("article shape: %s", res)
	}
}

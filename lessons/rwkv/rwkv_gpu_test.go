//go:build !nocuda

package rwkv

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// Awkward shapes: a single element, T not a multiple of anything, B not a multiple of 32, T at the
// 1024 limit, T just over a tile, and shapes that the tensor-core step takes.
var awkward = []Shape{
	{1, 1, 1}, {3, 5, 37}, {2, 3, 1024}, {8, 3, 40}, {16, 7, 100}, {33, 2, 17}, {8, 2, 1024},
	{32, 3, 32}, {64, 2, 96}, {32, 2, 1024}, {40, 3, 1100},
}

// Every forward step on fresh random inputs and NaN-poisoned outputs against the float64
// reference, on every output of the awkward shapes; shapes a step cannot take must be refused
// before launch (and never produce a wrong answer).
func TestForwardStepsOnAwkwardShapes(t *testing.T) {
	env := labtest.Open(t)
	for i, s := range awkward {
		p, err := NewProblem(env, s, uint64(100+i), 0)
		if err != nil {
			t.Fatal(err)
		}
		checkForwardSteps(t, p, forwardVariants())
		p.Free()
	}
}

// forwardVariants is every build of a forward kernel the lesson runs: the ladder, v5 at its other
// tile sizes (V5Tiles) and the general step.
func forwardVariants() []Step {
	steps := append([]Step{}, Steps...)
	for _, tt := range V5Tiles {
		if tt != V5Tile {
			steps = append(steps, V5Step(tt))
		}
	}
	return append(steps, GeneralStep)
}

// checkForwardSteps checks each of steps whose plan takes p's shape on p (one run on a NaN-poisoned
// output against the float64 reference) and fails t on an error or a wrong answer; a step whose plan
// refuses the shape must be refused by Check too, before any launch. It returns the names of the
// steps that ran.
func checkForwardSteps(t *testing.T, p *Problem, steps []Step) (ran []string) {
	t.Helper()
	s := p.Shape
	for _, st := range steps {
		if _, perr := p.Plan(st); perr != nil {
			if _, cerr := p.Check(st, ""); cerr == nil {
				t.Errorf("%s on %v: the plan refuses (%v) but Check ran", st.Name, s, perr)
			}
			t.Logf("%s on %v refused: %v", st.Name, s, perr)
			continue
		}
		ran = append(ran, st.Name)
		res, err := p.Check(st, "")
		if err != nil {
			t.Errorf("%s on %v: %v", st.Name, s, err)
			continue
		}
		if !res.OK {
			t.Errorf("%s on %v: %v", st.Name, s, res.Err())
		}
	}
	return ran
}

// Every step at the article's shape, on 1024 random rows, twice with different inputs.
func TestForwardStepsAtArticleShape(t *testing.T) {
	env := labtest.Open(t)
	for seed := uint64(1); seed <= 2; seed++ {
		p, err := NewProblem(env, ArticleShape, seed, 1024)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range Steps {
			res, err := p.Check(st, "")
			if err != nil {
				t.Fatalf("%s: %v", st.Name, err)
			}
			if !res.OK {
				t.Errorf("%s seed %d: %v", st.Name, seed, res.Err())
			}
			t.Logf("%s: %v", st.Name, res)
		}
		p.Free()
	}
}

// Each step is timed once at the article's shape (information for the log, not a pass criterion).
func TestForwardTimesLogged(t *testing.T) {
	if testing.Short() {
		t.Skip("timing in -short mode")
	}
	env := labtest.Open(t)
	p, err := NewProblem(env, ArticleShape, 3, 256)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	for _, st := range Steps {
		rec, err := p.Measure(st, "")
		if err != nil {
			t.Fatalf("%s: %v", st.Name, err)
		}
		t.Logf("%-22s %8.3f ms  %6.2f TFLOP/s  %5.1f%% of FP32 peak", st.Name, rec.MedianMS, rec.GFLOPs/1e3, rec.PctFLOPs)
	}
	for _, st := range Steps {
		if rep, err := p.Report(st); err == nil {
			t.Logf("%s: %d registers, %d B local, occupancy %.0f%% (%s)", st.Kernel, rep.Registers, rep.LocalBytes, 100*rep.Occupancy, rep.Limiter)
		}
	}
}

// The exercises' solutions pass their own checks on the GPU and are timed against v0; the untouched
// starters and a kernel that is wrong on the last output fail.
func TestExerciseSolutions(t *testing.T) {
	env := labtest.Open(t)
	for _, e := range Lesson.Exercises {
		sol, err := e.Solution()
		if err != nil {
			t.Fatal(err)
		}
		r, err := e.Check(env, sol)
		if err != nil {
			t.Fatalf("%s: %v", e.Title, err)
		}
		if !r.Passed || !r.Ran || r.Speedup() <= 0 {
			t.Errorf("%s: the solution fails: %+v", e.Title, r)
		}
		t.Logf("%s: %s yours %s, %s %s", e.Title, r.Reason, r.Mine, r.RefName, r.Ref)
		bad, err := e.Check(env, e.Starter)
		if err != nil {
			t.Fatalf("%s starter: %v", e.Title, err)
		}
		if bad.Passed {
			t.Errorf("%s: the unfinished starter must fail", e.Title)
		}
		t.Logf("%s, starter: %s", e.Title, bad.Reason)
	}
	sol, err := Exercises[0].Solution()
	if err != nil {
		t.Fatal(err)
	}
	wrong := strings.Replace(sol, "out[row * T + t] = s;", "if (t < T - 1) out[row * T + t] = s;", 1)
	if r, err := Exercises[0].Check(env, wrong); err != nil || r.Passed || !r.Ran {
		t.Errorf("exercise 1 leaving the last output unwritten: %+v %v", r, err)
	}
}

// The quick run works end to end: every forward step measured and correct.
func TestRunQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("the lesson's run in -short mode")
	}
	env := labtest.Open(t)
	run, err := Run(env, true)
	if err != nil {
		t.Fatal(err)
	}
	labtest.InPlan(t, env, Lesson, run, true)
	for _, st := range Steps {
		r, ok := run.Find("forward", st.Name, 0)
		if !ok || !r.Correct || r.MedianMS <= 0 {
			t.Errorf("%s: %+v", st.Name, r)
		}
	}
	for _, tab := range Tables(run) {
		fmt.Println(tab.Text())
	}
}

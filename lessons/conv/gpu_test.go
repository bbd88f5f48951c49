//go:build !nocuda

package conv

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// gpuShapes: size 1 everywhere, odd sizes, a stride larger than the kernel, padding at every
// border, channel counts off the 96-channel tile, a small AlexNet-like layer, a deep 3 x 3 layer.
var gpuShapes = []Shape{
	{N: 1, C: 1, H: 1, W: 1, K: 1, R: 1, S: 1, P: 0},
	{N: 1, C: 1, H: 3, W: 3, K: 1, R: 3, S: 1, P: 1},
	{N: 2, C: 3, H: 7, W: 9, K: 5, R: 3, S: 2, P: 1},
	{N: 3, C: 5, H: 13, W: 11, K: 97, R: 5, S: 3, P: 2},
	{N: 2, C: 3, H: 37, W: 41, K: 96, R: 11, S: 4, P: 2},
	{N: 1, C: 2, H: 9, W: 8, K: 7, R: 2, S: 5, P: 0},
	{N: 2, C: 64, H: 14, W: 15, K: 130, R: 3, S: 1, P: 1},
}

func refused(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "over the step's limit") || strings.Contains(err.Error(), "needs at least 3 x 3") || strings.Contains(err.Error(), "a 3 x 3 max pool"))
}

// Every step (and the fused ones where the pool applies) on every shape: checked against the
// float64 reference on a NaN-poisoned output, every output compared, or refused by its plan.
func TestStepsOnAwkwardShapes(t *testing.T) {
	env := labtest.Open(t)
	for i, s := range gpuShapes {
		for _, err := range checkSteps(t, env, s, uint64(100+i)) {
			t.Log(err)
		}
	}
}

// checkSteps checks every step on a problem of shape s drawn from seed (every output compared, on a
// NaN-poisoned output) and fails t where one is wrong or cannot run; it returns the refusals of the
// steps whose plan (or the pool's rule) does not take s, for the caller to judge.
func checkSteps(t *testing.T, env *lab.Env, s Shape, seed uint64) []error {
	t.Helper()
	p, err := NewProblem(env, s, seed, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	var refusals []error
	for _, st := range Steps {
		res, l, err := p.Check(st, "")
		switch {
		case refused(err):
			refusals = append(refusals, fmt.Errorf("%s on %v: refused: %w", st.Name, s, err))
		case err != nil:
			t.Fatalf("%s on %v: %v", st.Name, s, err)
		case !res.OK:
			t.Errorf("%s on %v (%s, grid %v): %v", st.Name, s, l.Kernel, l.Config.Grid, res.Err())
		default:
			t.Logf("%s on %v: %v", st.Name, s, res)
		}
	}
	return refusals
}

// The article's layer and the deep layer, every step, on sampled outputs (skipped in -short mode,
// which the sanitizer runs). It also prints each step's time for a first look.
func TestStepsAtTheLessonShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("the full-size layers are slow under the sanitizer")
	}
	env := labtest.Open(t)
	for _, s := range []Shape{AlexNet, Deep} {
		p, err := NewProblem(env, s, 7, 2048)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range Steps {
			if st.Fused && s != AlexNet {
				continue
			}
			rec, err := p.Measure(st, "", "test", "")
			if err != nil {
				t.Errorf("%s on %v: %v", st.Name, s, err)
				continue
			}
			t.Logf("%-22s %v: %.3f ms (%.1f TFLOP/s), rel L2 %.1e", st.Name, s.Short(), rec.MedianMS, rec.GFLOPs/1e3, rec.RelL2)
		}
		p.Free()
	}
}

// Without its ReLU the atomicMax step is wrong (negative values break the integer order), and the
// check says so; the tile-pooling step has no such dependence.
func TestAtomicMaxNeedsReLU(t *testing.T) {
	checkNoReLUFails(t, labtest.Open(t), Shape{N: 2, C: 3, H: 37, W: 41, K: 96, R: 11, S: 4, P: 2}, 5)
}

// checkNoReLUFails runs the atomicMax step without its ReLU on a problem of shape s drawn from seed
// and fails t unless its check fails (s must have pool windows whose conv outputs are all negative).
func checkNoReLUFails(t *testing.T, env *lab.Env, s Shape, seed uint64) {
	t.Helper()
	p, err := NewProblem(env, s, seed, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	res, _, err := p.Check(NoReLU, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.OK {
		t.Errorf("the atomicMax step without ReLU passed its check on %v: %v", s, res)
	}
	t.Logf("without ReLU on %v: %v (%v)", s, res, res.Err())
}

// Every exercise's solution passes its check on the GPU and every untouched starter fails it.
func TestExercisesOnTheGPU(t *testing.T) {
	env := labtest.Open(t)
	if testing.Short() {
		exTimed = false
		defer func() { exTimed = true }()
	}
	for _, x := range Exercises {
		checkSolution(t, env, x)
		r, err := x.Check(env, x.Starter)
		if err != nil || r.Passed {
			t.Errorf("exercise %d starter passed: %+v %v", x.Number, r, err)
		}
		t.Logf("exercise %d starter: %s", x.Number, r.Reason)
	}
}

// checkSolution checks exercise x's reference solution with the exercise's own check and fails t
// unless it ran on the GPU and passed.
func checkSolution(t *testing.T, env *lab.Env, x lab.Exercise) {
	t.Helper()
	sol, err := x.Solution()
	if err != nil {
		t.Fatal(err)
	}
	r, err := x.Check(env, sol)
	if err != nil || !r.Passed || !r.Ran {
		t.Errorf("exercise %d solution: %+v %v", x.Number, r, err)
	}
	t.Logf("exercise %d solution: %s %v", x.Number, r.Reason, r.Checks)
}

// The plans refuse what the steps cannot take, before any launch, naming the limit.
func TestPlansRefuseOnTheGPU(t *testing.T) {
	env := labtest.Open(t)
	d := env.Session.Device
	tooDeep := Shape{N: 1, C: 512, H: 8, W: 8, K: 8, R: 3, S: 1, P: 1}
	for _, st := range Steps[2:] {
		if _, err := st.PlanFor(tooDeep, d); err == nil || !strings.Contains(err.Error(), "4096") {
			t.Errorf("%s on C*R*R = 4608: %v", st.Name, err)
		}
	}
	wide := Shape{N: 1, C: 1, H: 200, W: 200, K: 1, R: 7, S: 8, P: 3}
	if _, err := Steps[1].PlanFor(wide, d); err == nil || !strings.Contains(err.Error(), "shared memory") {
		t.Errorf("step 2 on a 7x7 stride-8 layer: %v", err)
	}
}

// The compile reports of every step at the article's layer: a look, not an assertion.
func TestReports(t *testing.T) {
	env := labtest.Open(t)
	p, err := NewProblem(env, AlexNet, 9, 1024)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	for _, st := range Steps {
		rep, err := p.Report(st)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-22s %d registers, %d B local, %d blocks/SM (%s), dynamic %d B", st.Name, rep.Registers, rep.LocalBytes, rep.BlocksPerSM, rep.Limiter, rep.DynamicShared)
	}
}

// Under KERNELS_EMULATE=t4 the quick run skips exactly the steps the T4 refuses (no launch, no
// time) and records each as refused.
func TestRunEmulatedT4(t *testing.T) {
	labtest.RunEmulated(t, Lesson, "t4")
}

// The level-2 epilogue (EPILOGUE2: a ReLU, then a second per-filter bias) of every step that has
// it matches max(conv + bias, 0) + bias2 in float64 on every output, NaN-poisoned first, at the
// step's tolerance; a step without the build refuses the problem, as do the plain checks.
func TestEpilogue(t *testing.T) {
	env := labtest.Open(t)
	for i, s := range []Shape{{N: 2, C: 64, H: 14, W: 15, K: 130, R: 3, S: 1, P: 0}, {N: 2, C: 3, H: 37, W: 41, K: 96, R: 11, S: 4, P: 2}} {
		checkEpilogue(t, env, s, uint64(300+i))
	}
}

// checkEpilogue runs every step with an EPILOGUE2 build on layer s with a ReLU and a second bias.
func checkEpilogue(t *testing.T, env *lab.Env, s Shape, seed uint64) {
	t.Helper()
	p, err := NewProblem(env, s, seed, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	bias2 := make([]float32, s.K)
	for k := range bias2 {
		bias2[k] = float32(k%7)/4 - 0.75
	}
	b2, err := gpu.Upload(env.Session, bias2)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Free()
	if err := p.SetEpilogue(true, b2); err != nil {
		t.Fatal(err)
	}
	want := make([]float64, s.YLen())
	clipped := 0
	oh, ow := s.OH(), s.OW()
	for n := 0; n < s.N; n++ {
		for k := 0; k < s.K; k++ {
			for j := 0; j < oh*ow; j++ {
				v := ConvAt(s, p.In, n, k, j/ow, j%ow)
				if v < 0 {
					clipped++
				}
				want[(n*s.K+k)*oh*ow+j] = math.Max(v, 0) + float64(bias2[k])
			}
		}
	}
	if clipped == 0 || clipped == len(want) {
		t.Fatalf("%v: the ReLU clips %d of %d outputs; the test needs both kinds", s, clipped, len(want))
	}
	y, err := p.Output()
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, st := range Steps {
		if _, err := st.PlanFor(s, env.Session.Device); err != nil {
			continue
		}
		run, _, _, err := p.Launcher(st, "")
		if !st.Epilogue || st.Fused {
			if err == nil || !strings.Contains(err.Error(), "EPILOGUE2") {
				t.Errorf("%s has no EPILOGUE2 build and took the problem: %v", st.Name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s on %v: %v", st.Name, s, err)
			continue
		}
		if _, _, err := p.CheckRun(st, run, Launch{}); err == nil || !strings.Contains(err.Error(), "epilogue") {
			t.Errorf("%s: the plain check took a problem with an epilogue: %v", st.Name, err)
		}
		if err := y.Poison(); err != nil {
			t.Fatal(err)
		}
		if err := run(); err != nil {
			t.Fatal(err)
		}
		if err := env.Session.Synchronize(); err != nil {
			t.Fatalf("%s: %v", st.Name, err)
		}
		h, err := y.ToHost()
		if err != nil {
			t.Fatal(err)
		}
		got := make([]float64, len(h))
		for i, v := range h {
			got[i] = float64(v)
		}
		if res := check.Compare(got, want, st.Tol); !res.OK {
			t.Errorf("%s on %v with ReLU and a second bias: %v", st.Name, s, res.Err())
		}
		ran++
	}
	if ran == 0 {
		t.Errorf("%v: no step ran the epilogue", s)
	}
}

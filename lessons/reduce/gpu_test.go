//go:build !nocuda

package reduce

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/autograd"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	kr "github.com/cudalessons/cudalessons/kernels/reduce"
)

// softmaxShapes: one element, odd lengths, lengths off every vector and warp width, misaligned
// views (offset 1), a short row, rows of a block's size and more, up to the cluster step's limit.
var softmaxShapes = [][3]int{{1, 1, 0}, {3, 5, 0}, {5, 37, 0}, {4, 128, 0}, {4, 128, 1}, {7, 1000, 0}, {9, 1024, 0},
	{2, 4099, 0}, {3, 4100, 1}, {2, 8192, 0}, {2, 65536, 0}, {1, 262144, 0}}

// Every softmax step, every dtype it takes, on every shape: checked element by element on a
// NaN-poisoned output against the float64 softmax, or refused by its plan before any launch.
func TestSoftmaxSteps(t *testing.T) {
	env := labtest.Open(t)
	for i, sh := range softmaxShapes {
		steps := SoftmaxSteps
		if sh[1] > 8192 && testing.Short() {
			steps = SoftmaxSteps[1:] // the naive kernel is slow under the sanitizer
		}
		softmaxStepsOn(t, env, sh, uint64(i*10+1), steps)
	}
}

// softmaxStepsOn checks each of steps, in every dtype it takes, on one shape (rows, cols, offset):
// element by element on a NaN-poisoned output against the float64 softmax, or refused by its plan
// before any launch (logged). It returns the variants that ran (softmaxVariant).
func softmaxStepsOn(t *testing.T, env *lab.Env, sh [3]int, seed uint64, steps []SoftmaxStep) []string {
	t.Helper()
	var ran []string
	for _, s := range steps {
		for _, d := range s.DTypes {
			p, err := NewSoftmaxProblem(env, d, sh[0], sh[1], seed, sh[2])
			if err != nil {
				t.Fatal(err)
			}
			res, plan, err := p.Check(s, "")
			p.Free()
			switch {
			case refused(err):
				t.Logf("%s %s %v: refused: %v", s.Name, d, sh, err)
				continue
			case err != nil:
				t.Fatalf("%s %s %v: %v", s.Name, d, sh, err)
			case !res.OK:
				t.Errorf("%s %s %v (%s): %v", s.Name, d, sh, plan.Kernel, res.Err())
			}
			ran = append(ran, softmaxVariant(plan))
		}
	}
	return ran
}

// softmaxVariant names a softmax launch's variant: its kernel, "vec" when it moves vectors, and its
// compile-time defines.
func softmaxVariant(l SoftmaxLaunch) string {
	v := []string{l.Kernel}
	if l.Vec == 1 {
		v = append(v, "vec")
	}
	return strings.Join(append(v, l.Defines...), " ")
}

// The refusals the plans promise really happen on the GPU's pointers: a misaligned view is refused
// by the float4 steps and taken (with single floats) by the general ones.
func TestSoftmaxMisalignedViews(t *testing.T) {
	env := labtest.Open(t)
	p, err := NewSoftmaxProblem(env, F32, 3, 64, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	if _, _, err := p.Check(SoftmaxSteps[2], ""); !refused(err) {
		t.Errorf("step 3 on a misaligned view: %v", err)
	}
	if _, _, err := p.Check(SoftmaxSteps[4], ""); !refused(err) {
		t.Errorf("step 5 on a misaligned view: %v", err)
	}
	if _, plan, err := p.Check(SoftmaxSteps[3], ""); err != nil || plan.Vec != 0 {
		t.Errorf("step 4 on a misaligned view: %+v %v", plan, err)
	}
}

// Step 5 at every cluster size, including rows that leave whole blocks of the cluster empty.
func TestClusterSizes(t *testing.T) {
	env := labtest.Open(t)
	for _, cols := range []int{4, 32 * 1024, 32*1024 + 4, 100000, 200004, 262144} {
		p, err := NewSoftmaxProblem(env, F32, 3, cols, uint64(cols), 0)
		if err != nil {
			t.Fatal(err)
		}
		res, plan, err := p.Check(SoftmaxSteps[4], "")
		p.Free()
		if err != nil || !res.OK {
			t.Errorf("cols %d (%s): %v %v", cols, plan.Note, err, res.Err())
		}
	}
}

var lnShapes = [][3]int{{1, 1, 0}, {3, 7, 0}, {2, 1000, 0}, {5, 4099, 0}, {4, 4100, 1}, {3, 65536, 0}, {17, 3000, 0}, {40, 1024, 0}, {2, 70000, 0}, {1, 1 << 21, 0}}

// Every layer norm step on every shape, checked against the float64 layer norm, or refused.
func TestLayerNormSteps(t *testing.T) {
	env := labtest.Open(t)
	for i, sh := range lnShapes {
		lnStepsOn(t, env, sh, uint64(i+1))
	}
}

// lnStepsOn checks every layer norm step on one shape (N, M, offset) against the float64 layer
// norm on NaN-poisoned outputs, or logs its plan's refusal; it returns the variants that ran
// (lnVariant).
func lnStepsOn(t *testing.T, env *lab.Env, sh [3]int, seed uint64) []string {
	t.Helper()
	p, err := NewLNProblem(env, sh[0], sh[1], seed, false, false, sh[2])
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	var ran []string
	for _, s := range LNSteps {
		res, plan, err := p.Check(s, "")
		switch {
		case refused(err):
			t.Logf("%s %v: refused: %v", s.Name, sh, err)
			continue
		case err != nil:
			t.Fatalf("%s %v: %v", s.Name, sh, err)
		case !res.OK:
			t.Errorf("%s %v: %v", s.Name, sh, res.Err())
		}
		ran = append(ran, lnVariant(s, plan))
	}
	return ran
}

// lnVariant names a layer norm launch's variant: its step, the kernel of steps 5 and 6, and "vec"
// when it moves float4s.
func lnVariant(s LNStep, p LNPlan) string {
	v := []string{s.Name}
	if p.OnChip != "" {
		v = append(v, p.OnChip)
	}
	if p.Vec == 1 {
		v = append(v, "vec")
	}
	return strings.Join(v, " ")
}

// Mean 1000, standard deviation 0.1: the sum of squares fails, Welford holds, and so does step 5's
// shifted two-pass, on long samples, on LNShortStable and on samples of 3.
func TestStability(t *testing.T) {
	env := labtest.Open(t)
	n, m := 4, 1<<20
	if testing.Short() {
		n, m = 2, 1<<16
	}
	p, err := NewLNProblem(env, n, m, 5, true, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	short, err := NewLNProblem(env, LNShortStable[0], LNShortStable[1], 6, true, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer short.Free()
	// Samples of 3 (issue 23): (65536, 3), which only step 5 takes (the others refuse N > 65535 or
	// M % 4 != 0). Before its shifted sums, step 5 put 1310 of 196608 outputs outside the tolerance.
	tiny, err := NewLNProblem(env, 65536, 3, 7, true, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tiny.Free()
	ran := false
	for _, s := range LNSteps {
		for _, q := range []*LNProblem{p, short, tiny} {
			res, _, err := q.Check(s, "")
			if refused(err) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s (%d, %d): %s", s.Name, q.N, q.M, res)
			ran = ran || (q == tiny && s.Name == LNSteps[4].Name)
			wantOK := s.Name != LNSteps[1].Name
			if res.OK != wantOK {
				t.Errorf("%s (%d, %d) on mean 1000, std 0.1: ok = %v, want %v (%s)", s.Name, q.N, q.M, res.OK, wantOK, res)
			}
		}
	}
	if !ran {
		t.Error("step 5 did not run on (65536, 3)")
	}
}

func TestLayerNormBackward(t *testing.T) {
	env := labtest.Open(t)
	// (N, M, offset): float4 shapes, then single floats (M % 4 != 0, a misaligned view, M = 1).
	shapes := [][3]int{{1, 4, 0}, {2, 8, 0}, {3, 1000, 0}, {5, 4100, 0}, {4, 65536, 0}, {3, 7, 0}, {2, 1001, 0}, {4, 4100, 1}, {5, 1, 0}}
	if !testing.Short() {
		shapes = append(shapes, [3]int{LNSamples, LNSize, 0})
	}
	for i, sh := range shapes {
		checkLNBackward(t, env, sh, uint64(30+i))
	}
}

// checkLNBackward runs the forward (ForwardStep) and the backward once on one shape (N, M, offset)
// and checks dx, dw and db, poisoned before, against the float64 backward.
func checkLNBackward(t *testing.T, env *lab.Env, sh [3]int, seed uint64) {
	t.Helper()
	p, err := NewLNProblem(env, sh[0], sh[1], seed, false, true, sh[2])
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	res, err := p.CheckBackward("")
	if err != nil {
		t.Fatalf("%v: %v", sh, err)
	}
	if !res.OK {
		t.Errorf("backward %v: %v", sh, res.Err())
	}
}

// Every solution passes its exercise's check; every untouched starter fails it.
func TestExercises(t *testing.T) {
	if testing.Short() {
		t.Skip("the exercise checks include the article's shape")
	}
	env := labtest.Open(t)
	for _, x := range Lesson.Exercises {
		sol, err := x.Solution()
		if err != nil {
			t.Fatal(err)
		}
		r, err := x.Check(env, sol)
		if err != nil || !r.Passed || !r.Ran {
			t.Errorf("exercise %d solution: %+v %v", x.Number, r, err)
		}
		t.Logf("exercise %d solution: %s; mine %v, %s %v", x.Number, r.Reason, r.Mine, r.RefName, r.Ref)
		r, err = x.Check(env, x.Starter)
		if err != nil || r.Passed {
			t.Errorf("exercise %d starter passed: %+v %v", x.Number, r, err)
		}
		t.Logf("exercise %d starter: %s", x.Number, r.Reason)
	}
}

// Editing a step in the notebook: the original and an edited copy are checked and timed.
func TestTry(t *testing.T) {
	if testing.Short() {
		t.Skip("times at the article's shape")
	}
	env := labtest.Open(t)
	src, _ := kr.Source(SoftmaxSteps[3].File)
	if err := TrySoftmax(env, SoftmaxSteps[3].Name, strings.ReplaceAll(src.Code, "expf(", "__expf(")); err != nil {
		t.Error(err)
	}
	if err := TryLayerNorm(env, LNSteps[2].Name, ""); err != nil {
		t.Error(err)
	}
}

// TestTimings prints the time of every step and of the cluster step's variants at the article's
// shapes (not a target: the targets live in the reproduce run).
func TestTimings(t *testing.T) {
	if testing.Short() {
		t.Skip("timings")
	}
	env := labtest.Open(t)
	p, err := NewSoftmaxProblem(env, F32, SoftmaxRows, SoftmaxCols, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	bytes := SoftmaxWork(F32, SoftmaxRows, SoftmaxCols).Bytes
	line := func(name string, run func() error) {
		tm, err := env.Bench.Time(run)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("TIMING %-44s %s  %.1f%% of copy", name, tm, 100*bytes/(tm.Median*1e-3)/1e9/env.Receipt.CopyGBps)
	}
	t.Logf("copy bandwidth %.0f GB/s", env.Receipt.CopyGBps)
	for _, s := range SoftmaxSteps[:5] {
		run, _, _, err := p.Launcher(s, "")
		if err != nil {
			t.Fatal(err)
		}
		line("softmax "+s.Name, run)
	}
	for _, vecs := range []int{2, 4, 8, 16} {
		plan, err := PlanCluster(SoftmaxRows, SoftmaxCols, true, vecs)
		if err != nil {
			t.Fatal(err)
		}
		src, _ := kr.Source("s5_cluster.cu")
		for _, ld := range []string{"__ldcs", "__ldg"} {
			code := strings.Replace(src.Code, "__ldcs(x4 + j)", ld+"(x4 + j)", 1)
			for _, st := range []string{"__stcs", "__stwb"} {
				c := strings.Replace(code, "__stcs(y4 + j", st+"(y4 + j", 1)
				prog, err := env.BuildWith(compile.Source{Name: "variant.cu", Code: c}, compile.Options{Defines: plan.Defines}, plan.Kernel)
				if err != nil {
					t.Fatal(err)
				}
				k, _ := prog.Kernel(plan.Kernel)
				cfg := gpu.Config{Grid: gpu.D1(plan.Grid), Block: gpu.D1(plan.Block)}
				run := func() error { return k.Launch(cfg, p.X, p.Y, int32(p.Rows), int32(p.Cols)) }
				res, err := p.CheckRun(run)
				if err != nil || !res.OK {
					t.Errorf("cluster variant vecs %d %s %s: %v %v", vecs, ld, st, err, res.Err())
					continue
				}
				line(fmt.Sprintf("cluster vecs=%d %s (%d regs) %s %s", vecs, plan.Note, k.Attrs.Registers, ld, st), run)
			}
		}
	}
	p.Free()
	for _, d := range []DType{F16, BF16} {
		h, err := NewSoftmaxProblem(env, d, SoftmaxRows, SoftmaxCols, 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		run, _, _, err := h.Launcher(SoftmaxSteps[6], "")
		if err != nil {
			t.Fatal(err)
		}
		bytes = SoftmaxWork(d, SoftmaxRows, SoftmaxCols).Bytes
		line("softmax 7 "+string(d), run)
		h.Free()
	}
	q, err := NewSoftmaxProblem(env, F32, ShortRows[0], ShortRows[1], 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	bytes = SoftmaxWork(F32, ShortRows[0], ShortRows[1]).Bytes
	for _, s := range SoftmaxSteps[1:6] {
		run, _, _, err := q.Launcher(s, "")
		if err != nil {
			t.Fatal(err)
		}
		line("short rows "+s.Name, run)
	}
	q.Free()
	ln, err := NewLNProblem(env, LNSamples, LNSize, 1, false, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Free()
	bytes = LNWork(LNSamples, LNSize).Bytes
	for _, s := range LNSteps {
		run, plan, err := ln.Launcher(s, "")
		if refused(err) {
			continue // step 5: the article's samples do not fit on chip
		}
		if err != nil {
			t.Fatal(err)
		}
		line(fmt.Sprintf("layernorm %s P=%d", s.Name, plan.P), run)
	}
	bwd, _, err := ln.BackwardLauncher("")
	if err != nil {
		t.Fatal(err)
	}
	bytes = LNBackwardWork(LNSamples, LNSize).Bytes
	line("layernorm backward", bwd)
}

// The layer norm op on every path of its dispatch: y, dx, dweight and dbias against the float64
// references on NaN-poisoned outputs, then finite-difference gradient checks through the kernels.
func TestLayerNormOp(t *testing.T) {
	env := labtest.Open(t)
	seen := map[string]bool{}
	for i, c := range opShapes {
		if step := checkLNOp(t, env, c.Shape, c.Dims, uint64(50+i)); step != "" {
			seen[step] = true
		}
	}
	if env.Session.Device.SMs == 132 && len(seen) != 4 {
		t.Errorf("on an H100 the op's shapes should take steps 3, 4, 5 and 6; they took %v", seen)
	}
	// Finite differences through float32 kernels need short samples: the mean and rstd of a sample
	// feed all of its M outputs, so their float32 rounding (1.2e-7 relative) moves the loss by about
	// M x 1.2e-7 x |y| for ANY change of x, which over 2h = 0.02 passes the bound once M is over
	// about 10^4 (M = 65540 measured 0.07 off). The backward kernels' two paths (float4 and single
	// floats) run here; the long samples are checked against the float64 backward above.
	for i, c := range []struct {
		shape []int
		dims  int
		max   int
	}{{[]int{3, 7}, 1, 0}, {[]int{3, 2, 6}, 2, 0}, {[]int{2, 1030}, 1, 16}, {[]int{2, 2, 1001}, 1, 16}} {
		gradcheckLNOp(t, env, c.shape, c.dims, uint64(70+i), c.max)
	}
	op, err := NewLayerNormOp(env, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Free()
	x, _, b := LNOpInputs([]int{2, 3, 4}, 2, 1)
	w := autograd.Param("weight", make([]float64, 4), 4)
	if _, err := autograd.NewTape().Apply(op, x, w, b); err == nil || !strings.Contains(err.Error(), "weight has shape [4]") {
		t.Errorf("a weight of the wrong shape: %v", err)
	}
	if _, err := NewLayerNormOp(env, 0); err == nil {
		t.Error("an op over 0 dims was accepted")
	}
}

// checkLNOp runs the layer norm op forward and backward through a tape on x of the given shape,
// normalised over its last dims dimensions, checks y, dx, dweight and dbias against the float64
// references, and checks that it ran ForwardStep's step, then the backward (nothing at all without
// a sample). It returns that step's name, "" without a sample.
func checkLNOp(t *testing.T, env *lab.Env, shape []int, dims int, seed uint64) string {
	t.Helper()
	r, err := LNOpCheck(env, shape, dims, seed)
	if err != nil {
		t.Fatalf("%v: %v", shape, err)
	}
	t.Log(r)
	if !r.OK() {
		t.Errorf("%v", r)
	}
	x, w, b := LNOpInputs(shape, dims, 1)
	N, M, _ := LNShape(dims, []*autograd.Tensor{x, w, b})
	if N == 0 {
		if len(r.Launches) != 0 {
			t.Errorf("%v: no sample, yet it ran %v", shape, r.Launches)
		}
		return ""
	}
	want := ForwardStep(env.Session.Device, N, M, true).Name
	if len(r.Launches) != 2 || r.Launches[0] != want {
		t.Errorf("%v over %d dims ran %v, want %s then the backward", shape, dims, r.Launches, want)
	}
	return want
}

// gradcheckLNOp checks the op's backward against central finite differences through the float32
// kernels, on x of the given shape over dims dimensions, at most maxPerInput elements of each input
// (0: all).
func gradcheckLNOp(t *testing.T, env *lab.Env, shape []int, dims int, seed uint64, maxPerInput int) {
	t.Helper()
	res, launches, err := LNGradCheckGPU(env, shape, dims, seed, maxPerInput)
	if err != nil {
		t.Fatalf("gradcheck %v: %v", shape, err)
	}
	t.Logf("gradcheck %v (%v): %s", shape, launches, res)
	if !res.OK {
		t.Errorf("gradcheck %v over %d dims: %v", shape, dims, res.Err())
	}
}

// Under KERNELS_EMULATE=t4 the quick run skips exactly the steps the T4 refuses (no launch, no
// time) and records each as refused.
func TestRunEmulatedT4(t *testing.T) {
	labtest.RunEmulated(t, Lesson, "t4")
}

// Layer norm's backward at M = 1 through the op (issue 23): dx and dweight are exactly 0 in the
// float64 reference, the kernel leaves its last rounding times rstd = 1/sqrt(eps) (1.2e-6 measured).
// Under check.FP32 alone that was an infinite relative L2 error; LNBackwardTolerance's floor
// judges it. Also a sample of 3 (short, tiny references where it cancels).
func TestLayerNormBackwardM1(t *testing.T) {
	env := labtest.Open(t)
	for i, shape := range [][]int{{64, 1}, {4, 8, 1}, {32, 3}} {
		checkLNOp(t, env, shape, 1, uint64(90+i))
	}
}

// Zero-length rows on the GPU (issue 23, point 4): the layer norm op on x of shape (4, 0) and every
// softmax step on cols = 0 are refused before any launch, saying why.
func TestZeroLengthRowsOnGPU(t *testing.T) {
	env := labtest.Open(t)
	op, err := NewLayerNormOp(env, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Free()
	x, w, b := LNOpInputs([]int{4, 0}, 1, 1)
	if _, err := autograd.NewTape().Apply(op, x, w, b); err == nil || !strings.Contains(err.Error(), "the mean of nothing is undefined") {
		t.Errorf("the layer norm op on (4, 0): %v", err)
	}
	if len(op.Launches) != 0 {
		t.Errorf("the layer norm op on (4, 0) launched %v", op.Launches)
	}
	p, err := NewSoftmaxProblem(env, F32, 3, 0, 1, 0)
	if err != nil { // refused before any launch, at allocation (the plans' message is checked without a GPU)
		t.Logf("softmax (3, 0): %v", err)
		return
	}
	defer p.Free()
	for _, s := range SoftmaxSteps {
		if _, _, err := p.Check(s, ""); !refused(err) || !strings.Contains(err.Error(), "length zero") {
			t.Errorf("softmax %s on cols = 0: %v", s.Name, err)
		}
	}
}

// The layer norm op forward and backward on the magnitudes a model produces beyond the lesson's
// uniform inputs, at a length of each path of its dispatch (lnHostileKinds): constant samples
// (variance 0: y is the bias), constant at 1e30 and at 10000.3 (values whose float32 sums round),
// samples near 1e-30 (variance far below eps), near 1e-3 (variance near eps), near 1e15 (squares
// near 1e30, still inside float32) and near 2^-130 (subnormals): y, dx, dweight and dbias against
// the float64 references at LNOpCheck's tolerances. (A sample whose
// spread is far below its mean is ill-conditioned in float32 whatever the algorithm: the lesson's
// shifted inputs and ShiftedTolerance cover it.)
func TestLayerNormOpHostile(t *testing.T) {
	env := labtest.Open(t)
	kinds := lnHostileKinds
	for i, M := range []int{768, 1001, 65540, 300001} {
		N := len(kinds)
		xs := lnHostileX(kinds, M, uint64(1000+i))
		r, err := LNOpCheckOn(env, xs, []int{N, M}, 1, uint64(1010+i))
		if err != nil {
			t.Fatalf("(%d, %d): %v", N, M, err)
		}
		t.Log(r)
		if !r.OK() {
			t.Errorf("samples %v of (%d, %d): %v", kinds, N, M, r)
		}
	}
}

// Step 6's shift of each slice by its first value costs nothing measurable on ordinary inputs: the
// kernel timed as it is and with K = 0 (the kernel before the shift: x - 0 compiles to x), both
// checked first, at the shapes the lesson times it, alternately twice, and both best medians logged
// with their ratio. A measurement to read, not a timed pass or fail: it runs with KERNELS_TUNE set.
func TestGridResidentShiftCost(t *testing.T) {
	if os.Getenv("KERNELS_TUNE") == "" {
		t.Skip("KERNELS_TUNE not set")
	}
	env := labtest.Open(t)
	src, err := kr.Source(LNSteps[5].File)
	if err != nil {
		t.Fatal(err)
	}
	const shift = "const float K = c4 > 0 ? x[(long long)n * M + 4 * lo] : 0.f;"
	if !strings.Contains(src.Code, shift) {
		t.Fatalf("%s no longer has the line %q", LNSteps[5].File, shift)
	}
	unshifted := strings.Replace(src.Code, shift, "const float K = 0.f;", 1)
	for i, sh := range [][2]int{{128, 262144}, {LNSamples, LNSize}} {
		p, err := NewLNProblem(env, sh[0], sh[1], uint64(70+i), false, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		best := [2]float64{math.Inf(1), math.Inf(1)}
		for round := range 2 {
			for j, code := range []string{src.Code, unshifted} {
				if round == 0 {
					if res, _, err := p.Check(LNSteps[5], code); err != nil || !res.OK {
						t.Fatalf("step 6 (shifted %v) on %v: %v %v", j == 0, sh, err, res)
					}
				}
				run, _, err := p.Launcher(LNSteps[5], code)
				if err != nil {
					t.Fatal(err)
				}
				tm, err := env.Bench.Time(run)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("step 6 on %v, slices shifted %v: %s", sh, j == 0, tm)
				best[j] = math.Min(best[j], tm.Median)
			}
		}
		p.Free()
		t.Logf("TIMING step 6 on %v: shifted %.1f us, unshifted %.1f us, ratio %.3f", sh, 1e3*best[0], 1e3*best[1], best[0]/best[1])
	}
}

// lnPathShapes (N, M) take every path of the op's dispatch on an H100 or H200: step 5's warp kernel
// (float4 and single floats), its block kernel (both), step 6, step 3 (M % 4 != 0, too long for
// step 5) and step 4 (w and b past half the L2), each followed by the backward on float4s or single
// floats.
var lnPathShapes = [][2]int{{4, 768}, {3, 1001}, {3, 4100}, {3, 4099}, {2, 65540}, {2, 65537}, {1, 4200000}}

// checkLNOpScaled runs the op forward and backward on N samples of M, x uniform in [-1, 1) times
// xScale[n] in sample n and dy uniform in [-1, 1) times dyScale[n], and compares y and dx sample by
// sample (check.FP32; LNBackwardTolerance of that sample alone, so that a sample at 1e30 beside
// one at 1 is held to its own scale), dweight and dbias over all samples (LNBackwardTolerance), with
// the float64 references. It returns the forward step the op ran.
func checkLNOpScaled(t *testing.T, env *lab.Env, N, M int, xScale, dyScale []float32, seed uint64) string {
	t.Helper()
	xs, dys := Uniform(F32, N*M, -1, 1, seed), Uniform(F32, N*M, -1, 1, seed+3)
	for n := range N {
		for j := n * M; j < (n+1)*M; j++ {
			xs[j] *= xScale[n]
			dys[j] *= dyScale[n]
		}
	}
	r, err := lnOpRun(env, xs, dys, []int{N, M}, 1, seed)
	if err != nil {
		t.Fatalf("(%d, %d), x scales %v: %v", N, M, xScale, err)
	}
	for n := range N {
		x, dy := r.X[n*M:(n+1)*M], r.DY[n*M:(n+1)*M]
		y, _, _ := LayerNormSample(x, r.W, r.B, LNEps)
		if c := check.Compare(r.Got[0][n*M:(n+1)*M], y, check.FP32); !c.OK {
			t.Errorf("(%d, %d) with %v: y of sample %d (x near %g): %v", N, M, r.Launches, n, xScale[n], c.Err())
		}
		dx, _, _ := LayerNormBackward(x, r.W, dy, 1, M, LNEps)
		if c := check.Compare(r.Got[1][n*M:(n+1)*M], dx, LNBackwardTolerance(x, r.W, dy, 1, M)); !c.OK {
			t.Errorf("(%d, %d) with %v: dx of sample %d (x near %g, dy near %g): %v", N, M, r.Launches, n, xScale[n], dyScale[n], c.Err())
		}
	}
	_, dw, db := LayerNormBackward(r.X, r.W, r.DY, N, M, LNEps)
	tol := LNBackwardTolerance(r.X, r.W, r.DY, N, M)
	if c := check.Compare(r.Got[2], dw, tol); !c.OK {
		t.Errorf("(%d, %d) with %v, x scales %v: dweight: %v", N, M, r.Launches, xScale, c.Err())
	}
	if c := check.Compare(r.Got[3], db, tol); !c.OK {
		t.Errorf("(%d, %d) with %v, x scales %v: dbias: %v", N, M, r.Launches, xScale, c.Err())
	}
	if want := ForwardStep(env.Session.Device, N, M, true).Name; len(r.Launches) != 2 || r.Launches[0] != want {
		t.Errorf("(%d, %d) ran %v, want %s then the backward", N, M, r.Launches, want)
	}
	if len(r.Launches) == 0 {
		return ""
	}
	return r.Launches[0]
}

// The op is exact over float32's whole range on every path of its dispatch, forward and backward:
// samples at every scale from 1e-30 to 1e30 (from 1e20 their squared deviations overflow float32)
// against the float64 layer norm and its backward.
func TestLayerNormOpRange(t *testing.T) {
	env := labtest.Open(t)
	ran := map[string]bool{}
	for i, sh := range lnPathShapes {
		N, M := sh[0], sh[1]
		for k, scale := range lnScales {
			ran[checkLNOpScaled(t, env, N, M, slices.Repeat([]float32{scale}, N), slices.Repeat([]float32{1}, N), uint64(1100+100*i+k))] = true
		}
	}
	for _, s := range []LNStep{LNSteps[2], LNSteps[3], LNSteps[4], LNSteps[5]} {
		if !ran[s.Name] {
			t.Errorf("the layer norm op never ran %s (it ran %v)", s.Name, ran)
		}
	}
}

// Samples whose squared deviations overflow float32 (near 1e30 and 1e20) beside an ordinary one, on
// every path of the op's dispatch: each comes out exact, never NaN and never silently the bias,
// and the backward stays finite and exact with dy near 1e30 on the sample near 1e30 (dy w (x - mean)
// would be 1e60).
func TestLayerNormOpOutOfRange(t *testing.T) {
	env := labtest.Open(t)
	for i, sh := range lnPathShapes {
		checkLNOpScaled(t, env, 3, sh[1], []float32{1e30, 1, 1e20}, []float32{1e30, 1, 1}, uint64(1020+i))
	}
}

//go:build !nocuda

package matmul

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// Awkward shapes: size 1, odd sizes, sizes off every tile and vector width (rows that are not
// 16-byte aligned, a partial last tile in M, N and K), a single column, and the smallest shapes the
// fast steps take.
var awkward = []Shape{{1, 1, 1}, {3, 5, 7}, {33, 17, 65}, {64, 64, 8}, {128, 128, 32}, {256, 384, 96}, {130, 258, 40},
	{255, 255, 255}, {129, 1, 1000}, {3, 4100, 5}, {4097, 64, 16}}

// Every step and variant on every awkward shape it takes (every output checked, NaN-poisoned),
// with a refusal naming the limit on the others; the article's shape (sampled) and the non-square
// one in the long mode.
func TestStepsAreCorrect(t *testing.T) {
	env := labtest.Open(t)
	shapes := awkward
	if !testing.Short() {
		shapes = append(shapes, NonSquare, Article)
	}
	steps := append(append(append([]Step{}, Steps...), Variants[:len(Variants)-1]...), AnyShape)
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
			if !strings.Contains(err.Error(), "%") {
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
	if _, _, _, err := p.Launcher(st, ""); err == nil || !strings.Contains(err.Error(), "128 x 128 x 16 tile") {
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
	}{{Shape{M: 100, N: 300, K: 77}, false, AnyShape.Name}, {Shape{M: 4097, N: 65, K: 9}, false, AnyShape.Name}, {Shape{M: 513, N: 129, K: 1025}, false, AnyShape.Name}, {Shape{M: 4097, N: 65, K: 1}, false, "2 coalesced"}, {Shape{M: 256, N: 256, K: 64}, false, "9 fp16x3 split"}, {Shape{M: 256, N: 256, K: 64}, true, "8b 3xTF32 split"}} {
		checkMultiply(t, env, c.s, c.big, c.want)
	}
	if _, _, err := Multiply(env, make([]float32, 6), 2, 3, make([]float32, 8), 4, 2); err == nil || !strings.Contains(err.Error(), "inner dimensions") {
		t.Errorf("mismatched inner dimensions: %v", err)
	}
	if _, _, err := Multiply(env, nil, 0, 3, make([]float32, 6), 3, 2); err == nil || !strings.Contains(err.Error(), "at least 1") {
		t.Errorf("M = 0: %v", err)
	}
}

// checkMultiply multiplies inputs of shape s with Multiply (one of A's values over fp16's range when
// big is true), fails t unless it used the step named want, and checks every output (s is small)
// or a sample of them against the float64 reference.
func checkMultiply(t *testing.T, env *lab.Env, s Shape, big bool, want string) {
	t.Helper()
	a, b := Inputs(s, 3)
	if big {
		a[5] = 1e5 // over fp16's range: the fp16 split would overflow
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

// TestTune prints the time and error of every step and variant at 4096^3 and of extra builds (set
// MATMUL_TUNE=1): the measurements behind the steps' parameters, in one device call.
func TestTune(t *testing.T) {
	if os.Getenv("MATMUL_TUNE") == "" {
		t.Skip("set MATMUL_TUNE=1")
	}
	env := labtest.Open(t)
	p, err := NewCheckedProblem(env, Article, Seed)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	var extra []Step
	for _, v := range []struct {
		step string
		defs []string
	}{{"7", []string{"MIN_BLOCKS=2"}}, {"8 tensor core tf32", []string{"STAGES=2"}}} {
		st, err := StepByName(v.step)
		if err != nil {
			t.Fatal(err)
		}
		st.Defines = append(append([]string{}, st.Defines...), v.defs...)
		st.Name += fmt.Sprint(" ", v.defs)
		if v.defs[0] == "STAGES=2" {
			st.Plan = pipelined(st.Name, 32, 2*TF32Shared/3)
		}
		extra = append(extra, st)
	}
	var lines []string
	for _, st := range append(append(append([]Step{}, Steps...), Variants...), extra...) {
		rec, err := p.measureAnyway("tune", st)
		if err != nil {
			t.Errorf("%s: %v", st.Name, err)
			continue
		}
		rep, _ := p.Report(st)
		lines = append(lines, fmt.Sprintf("%-34s %9.3f ms %7.1f TFLOP/s  relL2 %.2e ok=%v  regs %d local %d smem %d+%d occ %.2f %s",
			st.Name, rec.MedianMS, rec.GFLOPs/1e3, rec.RelL2, rec.Correct, rep.Registers, rep.LocalBytes, rep.StaticSharedBytes, rep.DynamicShared, rep.Occupancy, rep.Limiter))
	}
	tr, err := RunTorch([]Shape{Article}, p, env.Bench.Method)
	if err != nil {
		lines = append(lines, "torch: "+err.Error())
	} else {
		for _, v := range TorchVariants {
			tm := tr.Times[Article.String()][v.Key]
			c := tr.Cross[v.Key]
			lines = append(lines, fmt.Sprintf("%-34s %9.3f ms %7.1f TFLOP/s  relL2 %.2e", v.Name, tm.MedianMS, Article.FLOPs()/tm.MedianMS/1e9, c.RelL2))
		}
	}
	fmt.Println(strings.Join(lines, "\n"))

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

package reduce

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/autograd"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"github.com/cudalessons/cudalessons/helpers/record"
)

func TestSoftmaxRowReference(t *testing.T) {
	x := []float32{1, 2, 3, 1000} // 1000 would overflow exp without the max subtraction
	y := SoftmaxRow(x)
	sum := 0.0
	for _, v := range y {
		sum += v
	}
	if math.Abs(sum-1) > 1e-15 || math.IsNaN(y[3]) || y[3] < 0.999 {
		t.Errorf("softmax %v: sum %v", y, sum)
	}
	y = SoftmaxRow([]float32{0.5, -0.25})
	want := math.Exp(0.5) / (math.Exp(0.5) + math.Exp(-0.25))
	if math.Abs(y[0]-want) > 1e-15 {
		t.Errorf("softmax[0] = %v, want %v", y[0], want)
	}
}

// The article's correctness hole: zeros pass allclose(1e-2) on long rows; our check rejects them,
// and so does the 16-bit tolerance derived from the reference.
func TestZerosPassKernelBenchButNotOurs(t *testing.T) {
	kb, ours := ZerosCheck(4, SoftmaxCols, 1)
	if !kb.OK {
		t.Errorf("zeros should pass atol=rtol=1e-2 on rows of 65536: %s", kb)
	}
	if ours.OK || ours.RelL2 != 1 {
		t.Errorf("zeros should fail the fp32 check with rel L2 1: %s", ours)
	}
	want := SoftmaxRow(Uniform(F32, SoftmaxCols, -4, 4, 2))
	for _, d := range []DType{F16, BF16} {
		tol := SoftmaxTolerance(d, want)
		if tol.RelL2 <= 0 || tol.RelL2 > 0.05 {
			t.Errorf("%s: derived norm bound %g", d, tol.RelL2)
		}
		if check.Compare(make([]float64, len(want)), want, tol).OK {
			t.Errorf("%s: zeros pass the 16-bit tolerance", d)
		}
		// The correctly rounded outputs pass it.
		got := make([]float64, len(want))
		for i, w := range want {
			got[i] = float64(d.Round(float32(w)))
		}
		if r := check.Compare(got, want, tol); !r.OK {
			t.Errorf("%s: correctly rounded outputs fail: %s", d, r)
		}
	}
}

func refused(err error) bool { return IsRefusal(err) }

// testH100 is the H100's profile as the plans see it.
var testH100 = gpu.DeviceInfo{Name: "H100 (test profile)", Major: 9, SMs: 132, MaxSharedPerBlock: 48 << 10, MaxSharedPerBlockOptin: 227 << 10, L2Bytes: 50 << 20}

// softmaxIn is a plan's input on testH100; aligned x and y are also at the same offset.
func softmaxIn(d DType, rows, cols int, aligned bool) SoftmaxInput {
	return SoftmaxInput{DType: d, Rows: rows, Cols: cols, Aligned: aligned, SameOffset: aligned, Device: testH100}
}

func TestSoftmaxPlansRefuseBeforeLaunch(t *testing.T) {
	for _, s := range SoftmaxSteps {
		d := s.DTypes[0]
		for _, c := range [][2]int{{0, 5}, {5, 0}, {-1, 3}} {
			if _, err := PlanSoftmax(s, softmaxIn(d, c[0], c[1], true)); !refused(err) {
				t.Errorf("%s %v: %v", s.Name, c, err)
			}
		}
	}
	s3, s5, s6 := SoftmaxSteps[2], SoftmaxSteps[4], SoftmaxSteps[5]
	for _, c := range []struct {
		s       SoftmaxStep
		cols    int
		aligned bool
		want    string
	}{
		{s3, 4099, true, "cols % 4"}, {s3, 4096, false, "aligned"},
		{s5, 4098, true, "cols % 4"}, {s5, 262148, true, "limit of 262144"},
		{s6, 1025, true, "limit of 1024"},
		{SoftmaxSteps[0], 65540, true, "limit of 65536"},
	} {
		_, err := PlanSoftmax(c.s, softmaxIn(F32, 3, c.cols, c.aligned))
		if !refused(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s cols %d aligned %v: %v, want a refusal naming %q", c.s.Name, c.cols, c.aligned, err, c.want)
		}
	}
	if _, err := PlanSoftmax(SoftmaxSteps[6], softmaxIn(F32, 3, 8, true)); !refused(err) {
		t.Errorf("step 7 took float32: %v", err)
	}
	// The general steps take what the vector steps refuse, with a note.
	if l, err := PlanSoftmax(SoftmaxSteps[3], softmaxIn(F32, 3, 4099, false)); err != nil || l.Vec != 0 {
		t.Errorf("step 4 on cols 4099 misaligned: %+v %v", l, err)
	}
	if l, err := PlanSoftmax(s6, softmaxIn(F32, 3, 37, true)); err != nil || l.Kernel != "softmax_warp_row1" {
		t.Errorf("step 6 on cols 37: %+v %v", l, err)
	}
}

func TestPlanCluster(t *testing.T) {
	for _, c := range []struct{ cols, cluster, threads int }{
		{65536, 2, 1024}, {262144, 8, 1024}, {128, 1, 32}, {4, 1, 32}, {32768, 1, 1024}, {32772, 2, 544},
	} {
		l, err := PlanCluster(10, c.cols, true, 8)
		if err != nil {
			t.Fatal(err)
		}
		if l.Grid != 10*c.cluster || l.Block != c.threads || l.Defines[0] != "CLUSTER="+itoa(c.cluster) {
			t.Errorf("cols %d: %+v, want cluster %d of %d threads", c.cols, l, c.cluster, c.threads)
		}
		if c.cluster*l.Block*8*4 < c.cols {
			t.Errorf("cols %d: the launch does not cover the row", c.cols)
		}
	}
}

func itoa(n int) string { return fmt.Sprint(n) }

func TestLayerNormPlansRefuseBeforeLaunch(t *testing.T) {
	dev := gpu.DeviceInfo{SMs: 132}
	for _, s := range LNSteps {
		for _, c := range [][2]int{{0, 5}, {5, 0}, {70000, 4}} {
			if c[0] == 70000 && (s.Name == LNSteps[4].Name || s.Name == LNSteps[5].Name) {
				continue // steps 5 and 6 have one-dimensional grids: they take any N
			}
			if _, err := PlanLayerNorm(dev, s, c[0], c[1], true); !refused(err) {
				t.Errorf("%s %v: %v", s.Name, c, err)
			}
		}
	}
	if _, err := PlanLayerNorm(dev, LNSteps[3], 4, 4099, true); !refused(err) || !strings.Contains(err.Error(), "M % 4") {
		t.Errorf("step 4 on M = 4099: %v", err)
	}
	if _, err := PlanLayerNorm(dev, LNSteps[2], 1, 1<<24, true); !refused(err) || !strings.Contains(err.Error(), "2^24") {
		t.Errorf("step 3 on M = 2^24: %v", err)
	}
	p, err := PlanLayerNorm(dev, LNSteps[3], LNSamples, LNSize, true)
	if err != nil || p.Vec != 1 || p.P != 132 || p.FusedGridX != LNSize/4/256 {
		t.Errorf("the article's shape: %+v %v", p, err)
	}
	if p, err := PlanLayerNorm(dev, LNSteps[2], 3, 7, false); err != nil || p.Vec != 0 || p.P != 1 {
		t.Errorf("(3, 7) misaligned: %+v %v", p, err)
	}
	h100 := gpu.DeviceInfo{SMs: 132, MaxSharedPerBlock: 48 << 10, MaxSharedPerBlockOptin: 227 << 10, L2Bytes: 50 << 20}
	for _, c := range []struct {
		n, m   int
		kernel string
	}{{1, 1, "ln_warp_rows"}, {100000, 1024, "ln_warp_rows"}, {7, 1025, "ln_block_row"}, {3, OnChipMax(h100), "ln_block_row"}} {
		if p, err := PlanLayerNorm(h100, LNSteps[4], c.n, c.m, true); err != nil || p.OnChip != c.kernel || (c.kernel == "ln_block_row") != (p.Shared == 4*c.m) {
			t.Errorf("step 5 on (%d, %d): %+v %v", c.n, c.m, p, err)
		}
	}
	if _, err := PlanLayerNorm(h100, LNSteps[4], 2, OnChipMax(h100)+1, true); !refused(err) || !strings.Contains(err.Error(), "shared memory") {
		t.Errorf("step 5 over its on-chip limit: %v", err)
	}
	if _, err := PlanLayerNorm(h100, LNSteps[3], 100000, 1024, true); !refused(err) || !strings.Contains(err.Error(), "65535") {
		t.Errorf("step 4 on 100000 samples: %v", err)
	}
	for _, c := range []struct {
		m       int
		aligned bool
		step    int
	}{{1024, true, 4}, {1 << 18, true, 5}, {LNSize, true, 3}, {GridResidentMax(h100) + 4, true, 3}, {LNSize + 1, true, 2}, {LNSize, false, 2}} {
		if s := ForwardStep(h100, 16, c.m, c.aligned); s.Name != LNSteps[c.step].Name {
			t.Errorf("ForwardStep(16, %d, aligned %v) = %s, want %s", c.m, c.aligned, s.Name, LNSteps[c.step].Name)
		}
	}
	if p, err := PlanLayerNorm(h100, LNSteps[5], LNSamples, LNSize, true); err != nil || p.Grid != 132 || p.Team != 132 || p.Chunk4 != LNSize/4/132+1 || p.Shared != 16*p.Chunk4 || p.Shared > 227<<10 {
		t.Errorf("step 6 at the article's shape: %+v %v", p, err)
	}
	// 262144 floats need 5 blocks of 227 KB: 26 teams of 5; 3 samples of 65540 floats: 3 teams of 44.
	for _, c := range [][4]int{{128, 1 << 18, 26, 5}, {3, 65540, 3, 44}} {
		if p, err := PlanLayerNorm(h100, LNSteps[5], c[0], c[1], true); err != nil || p.Grid != c[2]*c[3] || p.Team != c[3] || p.Shared > 227<<10 {
			t.Errorf("step 6 on (%d, %d): %+v %v, want %d teams of %d", c[0], c[1], p, err, c[2], c[3])
		}
	}
	if _, err := PlanLayerNorm(h100, LNSteps[5], 2, GridResidentMax(h100)+4, true); !refused(err) || !strings.Contains(err.Error(), "all 132 SMs") {
		t.Errorf("step 6 over its limit: %v", err)
	}
	if _, err := PlanLayerNorm(h100, LNSteps[5], 2, 4098, true); !refused(err) || !strings.Contains(err.Error(), "M % 4") {
		t.Errorf("step 6 on M = 4098: %v", err)
	}
	if p, err := PlanLNBackward(h100, 3, 7, true); err != nil || p.Vec != 0 || p.FusedGridX != 1 {
		t.Errorf("backward (3, 7): %+v %v", p, err)
	}
	if _, err := PlanLNBackward(h100, 1, 1<<24, true); !refused(err) || !strings.Contains(err.Error(), "backward") {
		t.Errorf("backward on M = 2^24: %v", err)
	}
}

// The float64 backward is proven by finite differences (and a wrong one would not pass).
func TestLayerNormBackwardByFiniteDifferences(t *testing.T) {
	for _, s := range [][2]int{{1, 1}, {2, 5}, {3, 37}} {
		if e, err := ProveBackward(s[0], s[1], uint64(s[1])); err != nil {
			t.Errorf("%v: %v", s, err)
		} else {
			t.Logf("%v: max relative error %.2g", s, e)
		}
	}
}

func TestLayerNormReference(t *testing.T) {
	x := []float32{1, 2, 3, 4}
	w := []float32{1, 1, 2, 1}
	b := []float32{0, 0, 0, 1}
	y, mean, rstd := LayerNormSample(x, w, b, 0)
	if mean != 2.5 || math.Abs(rstd-1/math.Sqrt(1.25)) > 1e-15 {
		t.Errorf("mean %v rstd %v", mean, rstd)
	}
	want := []float64{-1.5 * rstd, -0.5 * rstd, 2 * 0.5 * rstd, 1.5*rstd + 1}
	for i := range y {
		if math.Abs(y[i]-want[i]) > 1e-15 {
			t.Errorf("y[%d] = %v, want %v", i, y[i], want[i])
		}
	}
}

func TestSumOfSquaresFailsWhereWelfordHolds(t *testing.T) {
	h := float32(0.1 * math.Sqrt(3))
	xs := Uniform(F32, 1<<16, 1000-h, 1000+h, 3)
	ss, w := VarianceInFloat32(xs)
	exact := 0.01 // the variance of U(-h, h) is h^2/3 = 0.01; the sample's is within a percent
	if math.Abs(float64(ss)-exact)/exact < 0.5 {
		t.Errorf("sum of squares gave %v: expected it to lose the variance (about 0.01)", ss)
	}
	if math.Abs(float64(w)-exact)/exact > 0.05 {
		t.Errorf("Welford gave %v, want about 0.01", w)
	}
}

func TestTargetsFromARun(t *testing.T) {
	run := &record.Run{}
	add := func(c, v, kind string, ms, pct float64, ok bool) {
		run.Add(record.Record{Case: c, Variant: v, Kind: kind, MedianMS: ms, PctBW: pct, Correct: ok})
	}
	add(CaseSoftmax, "5 cluster, read once", "kernel", 0.8, 90, true)
	add(CaseSoftmax, "3 warp shuffles + float4", "kernel", 0.7, 95, false) // wrong: never "best"
	add(CaseSoftmax, Compiled, "baseline", 1.06, 60, false)
	add(CaseLN, "4 fused normalise + affine", "kernel", 0.3, 80, true)
	add(CaseLN, Compiled, "baseline", 0.284, 80, false)
	add(CaseLN, Eager, "baseline", 8, 3, false)
	for _, c := range []struct {
		v    string
		size int64
		pct  float64
	}{{"6 warp per row", 1024, 97}, {"8 any length, read once", 1024, 60}, {"8 any length, read once", 393216, 70}, {"9 split row, two passes", 393216, 66}} {
		run.Add(record.Record{Case: CaseSoftmaxSweep, Variant: c.v, Kind: "kernel", Size: c.size, MedianMS: 1, PctBW: c.pct, Correct: true})
	}
	add(CaseLongRows, "8 any length, read once", "kernel", 5.5, 70, true)
	add(CaseLongRows, Compiled, "baseline", 6.8, 60, false)
	tg := Targets(run)
	want := []bool{true, true, false, false, false, true}
	if !strings.Contains(tg[2].Figure, "393216 floats per row, 8 any length, read once at 70") {
		t.Errorf("the sweep's worst length: %q", tg[2].Figure)
	}
	for i, w := range want {
		if !tg[i].Known || tg[i].Met != w {
			t.Errorf("target %q: %+v, want met=%v", tg[i].Goal, tg[i], w)
		}
	}
	if len(TargetsTable(run).Rows) != len(tg) {
		t.Error("targets table rows")
	}
}

// Layer norm's backward at M = 1 (issue 23): dx and dw are exactly 0, and the kernel's last
// rounding, scaled by rstd = 1/sqrt(eps), leaves about 1e-6 (modelled here in float32 with the
// kernel's fused multiply-add d * g - c1). check.FP32 alone calls that an infinite relative error;
// LNBackwardTolerance's floor passes it. An all-zero or a sign-flipped dx at ordinary M fails it.
func TestLNBackwardToleranceFloor(t *testing.T) {
	N, M := 64, 1
	x, w, dy := Uniform(F32, N*M, -1, 1, 1), Uniform(F32, M, 0.5, 1.5, 2), Uniform(F32, N*M, -1, 1, 3)
	dx, _, _ := LayerNormBackward(x, w, dy, N, M, LNEps)
	got := make([]float64, N*M)
	for n := 0; n < N; n++ {
		rstd := float32(1 / math.Sqrt(LNEps)) // the variance of one value is 0
		g := dy[n] * w[0]
		c1 := g / float32(M)
		got[n] = float64(rstd * float32(math.FMA(float64(dy[n]), float64(w[0]), -float64(c1))))
	}
	tol := LNBackwardTolerance(x, w, dy, N, M)
	if old := check.Compare(got, dx, check.FP32); old.OK {
		t.Logf("the float32 model left no residue (%v): the floor is not exercised", old)
	}
	if r := check.Compare(got, dx, tol); !r.OK || tol.Floor <= 0 {
		t.Errorf("M = 1: %v %v (%s)", r, r.Err(), tol.Why)
	}
	// A residue of 1.2e-6 on every element (the measured error) passes too.
	for i := range got {
		got[i] = 1.2e-6 * float64(1-2*(i%2))
	}
	if r := check.Compare(got, dx, tol); !r.OK {
		t.Errorf("M = 1, measured residue: %v", r.Err())
	}
	if r := check.Compare(got, dx, check.FP32); r.OK || !math.IsInf(r.RelL2, 1) {
		t.Errorf("the old check should fail it with an infinite relative error: %v", r)
	}
	// Ordinary samples: the floor stays under FP32's Abs and wrong gradients fail.
	N, M = 4, 1000
	x, w, dy = Uniform(F32, N*M, -1, 1, 4), Uniform(F32, M, 0.5, 1.5, 5), Uniform(F32, N*M, -1, 1, 6)
	dx, dw, db := LayerNormBackward(x, w, dy, N, M, LNEps)
	tol = LNBackwardTolerance(x, w, dy, N, M)
	if tol.Abs != check.FP32.Abs {
		t.Errorf("uniform samples: the floor raised Abs to %g", tol.Abs)
	}
	want := append(append(append([]float64{}, dx...), dw...), db...)
	flip := append([]float64{}, want...)
	for i := range dx {
		flip[i] = -flip[i]
	}
	for name, got := range map[string][]float64{"zeros": make([]float64, len(want)), "dx sign flipped": flip} {
		if r := check.Compare(got, want, tol); r.OK {
			t.Errorf("%s passed: %v", name, r)
		}
	}
}

// The article's hole (zeros pass allclose on long softmax rows) stays shut under a floor derived
// from the softmax's own sums: cols terms of size 1/cols.
func TestZerosFailUnderAFloor(t *testing.T) {
	x := Uniform(F32, SoftmaxCols, -4, 4, 9)
	want := SoftmaxRow(x)
	tol := check.FP32.WithFloor(check.SumFloor(check.U32, SoftmaxCols, 1/float64(SoftmaxCols)), "softmax: cols terms of size 1/cols")
	if r := check.Compare(make([]float64, len(want)), want, tol); r.OK {
		t.Errorf("zeros passed %s: %v", tol.Name, r)
	}
}

// Zero-length rows (issue 23, point 4): softmax over cols = 0 and layer norm over M = 0 have no
// answer (a sum of nothing, the mean of nothing). Every plan, forward and backward, and the op's
// shape reader refuse them before any launch, with a message that says why.
func TestZeroLengthRowsRefused(t *testing.T) {
	for _, s := range SoftmaxSteps {
		for _, d := range s.DTypes {
			_, err := PlanSoftmax(s, softmaxIn(d, 3, 0, true))
			if !refused(err) || !strings.Contains(err.Error(), "cols = 0: a row of length zero has no softmax") {
				t.Errorf("softmax %s %s on cols = 0: %v", s.Name, d, err)
			}
		}
	}
	h100 := gpu.DeviceInfo{SMs: 132, MaxSharedPerBlock: 48 << 10, MaxSharedPerBlockOptin: 227 << 10, L2Bytes: 50 << 20}
	for _, s := range LNSteps {
		_, err := PlanLayerNorm(h100, s, 3, 0, true)
		if !refused(err) || !strings.Contains(err.Error(), "the normalised size is 0: the mean of nothing is undefined") {
			t.Errorf("layer norm %s on M = 0: %v", s.Name, err)
		}
	}
	if _, err := PlanLNBackward(h100, 3, 0, true); !refused(err) || !strings.Contains(err.Error(), "0") {
		t.Errorf("layer norm backward on M = 0: %v", err)
	}
	for _, c := range []struct {
		shape []int
		dims  int
	}{{[]int{4, 0}, 1}, {[]int{2, 3, 0}, 2}, {[]int{0}, 1}} {
		x, w, b := LNOpInputs(c.shape, c.dims, 1)
		_, _, err := LNShape(c.dims, []*autograd.Tensor{x, w, b})
		if err == nil || !strings.Contains(err.Error(), "hold no element: the mean of nothing is undefined") {
			t.Errorf("the op on x %v over %d dims: %v", c.shape, c.dims, err)
		}
	}
}

// stepFiveModel is ln_warp_rows on samples of 3 in float32 (the warp sum's order for three lanes:
// (v0 + v2) + v1), unshifted as before issue 23 or shifted by the sample's first value as now.
func stepFiveModel(x, w, b []float32, M int, shifted bool) []float64 {
	y := make([]float64, 0, len(x))
	for n := 0; n < len(x)/M; n++ {
		xs := x[n*M : (n+1)*M]
		var K float32
		if shifted {
			K = xs[0]
		}
		v := []float32{xs[0] - K, xs[1] - K, xs[2] - K}
		mean := ((v[0] + v[2]) + v[1]) / float32(M)
		d := []float32{v[0] - mean, v[1] - mean, v[2] - mean}
		q := (d[0]*d[0] + d[2]*d[2]) + d[1]*d[1]
		rstd := float32(1 / math.Sqrt(float64(q/float32(M)+float32(LNEps))))
		for j := range v {
			y = append(y, float64((v[j]-mean)*rstd*w[j]+b[j]))
		}
	}
	return y
}

// Step 5 on short samples with a large offset (issue 23: x of shape (65536, 3), mean 1000, std
// 0.1), modelled in float32: unshifted, the rounding of the mean (up to an ulp of 1000) is a large
// share of a 3-value sample's spread and the check fails; shifted by the first value, it passes.
func TestStepFiveShiftedSums(t *testing.T) {
	N, M := 65536, 3
	h := float32(0.1 * math.Sqrt(3))
	x := Uniform(F32, N*M, 1000-h, 1000+h, 6)
	w, b := Uniform(F32, M, 0.5, 1.5, 7), Uniform(F32, M, -0.5, 0.5, 8)
	var want []float64
	for n := 0; n < N; n++ {
		y, _, _ := LayerNormSample(x[n*M:(n+1)*M], w, b, LNEps)
		want = append(want, y...)
	}
	old := check.Compare(stepFiveModel(x, w, b, M, false), want, ShiftedTolerance)
	now := check.Compare(stepFiveModel(x, w, b, M, true), want, ShiftedTolerance)
	t.Logf("unshifted: %v; shifted: %v", old, now)
	if old.OK {
		t.Errorf("the unshifted model passed: the case no longer shows the problem: %v", old)
	}
	if !now.OK {
		t.Errorf("the shifted model failed: %v", now.Err())
	}
	if r := check.Compare(stepFiveModel(x, w, b, M, true), want, check.FP32); !r.OK {
		t.Logf("shifted, at plain fp32 (not required): %v", r.Err())
	}
}

// Step 8's plan on the H100: registers while one block holds the row, then up to 13 float4s per
// thread in shared memory in the smallest cluster that holds the row; then 12 and 16 blocks; past
// that, all the shared memory of 16 blocks; longer rows are refused naming the limit.
func TestPlanClusterAny(t *testing.T) {
	for _, c := range []struct {
		cols            int
		cluster, stash  int
		persistent, big bool
	}{{4099, 1, 0, false, false}, {32768, 1, 0, false, false}, {32772, 1, 13, false, false}, {65536, 2, 12, false, false}, {262144, 8, 12, false, false}, {393216, 12, 12, false, true},
		{524288, 16, 12, true, true}, {786432, 16, 20, true, true}, {1048576, 16, 28, true, true}} {
		l, err := PlanClusterAny(softmaxIn(F32, 3, c.cols, true), DefaultClusterPolicy)
		if err != nil {
			t.Fatalf("cols %d: %v", c.cols, err)
		}
		if l.Cluster != c.cluster || l.Defines[2] != fmt.Sprintf("SVECS=%d", c.stash) || l.Persistent != c.persistent || l.LargeCluster != c.big {
			t.Errorf("cols %d: %+v, want cluster %d, %d float4s in shared memory", c.cols, l, c.cluster, c.stash)
		}
		vecs := DefaultClusterPolicy.Vecs
		if c.cols <= 32768 {
			vecs = DefaultClusterPolicy.RegisterVecs
		}
		if got := l.Cluster * l.Block * (vecs + c.stash) * 4; got < c.cols || l.Shared != c.stash*l.Block*16 {
			t.Errorf("cols %d: the launch holds %d floats with %d bytes of shared memory", c.cols, got, l.Shared)
		}
	}
	if _, err := PlanClusterAny(softmaxIn(F32, 3, 1500001, true), DefaultClusterPolicy); err == nil || !strings.Contains(err.Error(), "limit of") {
		t.Errorf("1500001 floats: %v", err)
	}
	for _, c := range []struct {
		cols int
		want SoftmaxStep
	}{{1000, SoftmaxSteps[5]}, {50257, SoftmaxSteps[7]}, {262144, SoftmaxSteps[7]}, {262148, SoftmaxSteps[10]}, {1048576, SoftmaxSteps[10]},
		{4000000, SoftmaxSteps[9]}} {
		if got := PickSoftmax(softmaxIn(F32, 64, c.cols, true)); got.Name != c.want.Name {
			t.Errorf("the op on rows of %d picks %s, want %s", c.cols, got.Name, c.want.Name)
		}
	}
	// Without clusters: step 4 for many moderate rows, step 9 for few, step 11 past ClusterMaxCols
	// where the GPU has cp.async (8.0) and two slices fit (an L4 holds rows of up to about 693K
	// floats), step 9 otherwise and on a T4.
	for _, c := range []struct {
		profile    string
		rows, cols int
		want       SoftmaxStep
	}{{"a100-80", 1000, 4099, SoftmaxSteps[3]}, {"a100-80", 64, 4099, SoftmaxSteps[9]}, {"a100-80", 64, 524288, SoftmaxSteps[10]},
		{"l4", 64, 524288, SoftmaxSteps[10]}, {"l4", 64, 1048576, SoftmaxSteps[9]}, {"t4", 64, 524288, SoftmaxSteps[9]}} {
		in := softmaxIn(F32, c.rows, c.cols, true)
		in.Device = labtest.ProfileDevice(t, c.profile)
		if got := PickSoftmax(in); got.Name != c.want.Name {
			t.Errorf("the op on %s, (%d, %d), picks %s, want %s", c.profile, c.rows, c.cols, got.Name, c.want.Name)
		}
	}
}

// The float64 softmax backward is the gradient of sum(dy * softmax(x)): central differences agree.
func TestSoftmaxBackwardRowByFiniteDifferences(t *testing.T) {
	x, dy := Uniform(F32, 7, -2, 2, 3), Uniform(F32, 7, -1, 1, 4)
	loss := func(x []float32) float64 {
		s := 0.0
		for i, v := range SoftmaxRow(x) {
			s += v * float64(dy[i])
		}
		return s
	}
	dx := SoftmaxBackwardRow(SoftmaxRow(x), dy)
	const h = 1e-3
	for i := range x {
		xp, xm := slices.Clone(x), slices.Clone(x)
		xp[i] += h
		xm[i] -= h
		num := (loss(xp) - loss(xm)) / (float64(xp[i]) - float64(xm[i]))
		if math.Abs(num-dx[i]) > 1e-5 {
			t.Errorf("dx[%d] = %.8f, central difference %.8f", i, dx[i], num)
		}
	}
}

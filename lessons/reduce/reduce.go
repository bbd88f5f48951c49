// Package reduce is lesson 04, row reductions: softmax and layer norm, after the KernelBench
// article's generated kernels (Stanford CRFM), taught properly and with what the article got wrong.
//
// Softmax over the rows of (4096, 65536) float32 climbs from a naive thread-per-row kernel to a
// kernel that reads each row exactly once by splitting it across a Hopper thread block cluster;
// a warp per row handles short rows, and half and bfloat16 rows use float arithmetic. Then rows of
// any length (KernelBench's 4096 x 393216, GPT-2's 50257): clusters of up to 16 blocks holding a
// row in registers and shared memory, scalar heads and tails, and split rows for GPUs without
// clusters; SoftmaxOp wraps them as an autograd op with its backward. Layer norm
// over the last three dimensions of (16, 64, 256, 256) climbs from one block per sample to
// Welford statistics and a normalise pass that loads the weight and bias once, and has a backward
// checked by finite differences. Every step is checked against a float64 reference on
// NaN-poisoned outputs and timed beside PyTorch eager and torch.compile in the same run.
//
//	env, _ := lab.Open()
//	run, err := env.Results(reduce.Lesson, false) // measured on a GPU, recorded otherwise
//	for _, t := range reduce.Tables(run) { t.Display() }
package reduce

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/dtype"
	"github.com/cudalessons/cudalessons/helpers/lab"
)

// ID names the lesson's results (results/04_reductions.json and its profiles).
const ID = "04_reductions"

// The lesson's two notebooks, one sitting each: softmax, then layer norm.
const (
	SoftmaxNotebook   = "04_softmax.ipynb"
	LayerNormNotebook = "04b_layernorm.ipynb"
)

// Lesson is lesson 04 for the reproduce command.
var Lesson = lab.Lesson{ID: ID, Title: "Row reductions: softmax and layer norm, and what the generated kernels got wrong",
	Notebooks: []string{SoftmaxNotebook, LayerNormNotebook},
	Run:       Run, Tables: Tables, Figures: Figures, Exercises: Exercises, Steps: StepChecks}

// The article's workloads.
const (
	SoftmaxRows = 4096
	SoftmaxCols = 65536
	LNSamples   = 16
	LNSize      = 64 * 256 * 256 // the normalised size: the last three dimensions of (16, 64, 256, 256)
	LNEps       = 1e-5           // F.layer_norm's default
)

// DType is an element type of the lesson.
type DType = dtype.DType

// The lesson's storage types.
const (
	F32  = dtype.F32
	F16  = dtype.F16
	BF16 = dtype.BF16
)

// Uniform fills n values uniformly in [lo, hi) from a seeded generator, rounded to the dtype.
func Uniform(d DType, n int, lo, hi float32, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]float32, n)
	for i := range out {
		out[i] = d.Round(lo + (hi-lo)*r.Float32())
	}
	return out
}

// SoftmaxRow is the float64 softmax of one row: exp(x - max) / sum exp(x - max).
func SoftmaxRow(x []float32) []float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, float64(v))
	}
	out := make([]float64, len(x))
	s := 0.0
	for i, v := range x {
		out[i] = math.Exp(float64(v) - m)
		s += out[i]
	}
	for i := range out {
		out[i] /= s
	}
	return out
}

// SoftmaxTolerance is the check of a softmax output in dtype d, for rows whose float64 softmax is
// want. Float32 outputs use check.FP32: the kernels' sums are at most a few hundred terms per
// thread followed by a tree, and every output shares its row's sum, so the error stays near float's
// 1e-7. A 16-bit output is rounded once from a float result: it may land one spacing of its dtype
// away (half a spacing of rounding, plus float error that can cross a rounding boundary), so the
// elementwise bound is one ulp: 2^-10 relative for half, 2^-7 for bfloat16, and for half 2^-24
// absolute (the spacing of its subnormals: at 64K columns every output, about 1.5e-5, is below
// half's smallest normal number 6.1e-5). The norm bound is the norm of that elementwise bound over
// want, so it is derived, not chosen: an all-zero output still fails it.
func SoftmaxTolerance(d DType, want []float64) check.Tolerance {
	if d == F32 {
		return check.FP32
	}
	t := check.Tolerance{Name: "fp16-softmax", Rel: math.Ldexp(1, -10), Abs: math.Ldexp(1, -24),
		Why: "one half ulp: 2^-10 relative, 2^-24 absolute (subnormal spacing); norm bound = the norm of that bound over the reference"}
	if d == BF16 {
		t = check.Tolerance{Name: "bf16-softmax", Rel: math.Ldexp(1, -7), Abs: 1e-38,
			Why: "one bfloat16 ulp: 2^-7 relative; norm bound = the norm of that bound over the reference"}
	}
	var num, den float64
	for _, w := range want {
		e := t.Abs + t.Rel*math.Abs(w)
		num += e * e
		den += w * w
	}
	if den > 0 {
		t.RelL2 = math.Sqrt(num / den)
	}
	return t
}

// KernelBench is the article's correctness rule: allclose with atol = rtol = 1e-2 and no norm
// check. Returning zeros passes it on long softmax rows, whose outputs are all far below 1e-2.
var KernelBench = check.Tolerance{Name: "KernelBench atol=rtol=1e-2", RelL2: math.Inf(1), Rel: 1e-2, Abs: 1e-2,
	Why: "the article's allclose(atol=1e-2, rtol=1e-2), no relative-error check"}

// ShiftedTolerance is the check of a layer norm on inputs with mean 1000 and standard deviation
// 0.1. Its condition number is kappa = |mean| / std = 1e4: the float32 mean alone is off by up to
// half an ulp of 1000 (3.05e-5, which is 3.05e-4 standard deviations), so even an exact algorithm
// in float32 is about u * kappa = 6e-4 away from the float64 answer. A stable algorithm stays
// within a few u * kappa; this bound is 4 u * kappa = 2.4e-3. The sum-of-squares variance has
// error about u * kappa^2 = 6: nothing is left.
var ShiftedTolerance = check.Tolerance{Name: "fp32, mean 1000 std 0.1", RelL2: 2.4e-3, Rel: 2.4e-3, Abs: 2.4e-3,
	Why: "condition number |mean|/std = 1e4: float32's u (6e-8) x 1e4 = 6e-4 for any float32 algorithm; a stable one stays within 4 u kappa"}

// LayerNormSample is the float64 layer norm of one sample x with weight w and bias b, and the
// sample's mean and 1/sqrt(var + eps) (the biased variance, by the two-pass formula).
func LayerNormSample(x, w, b []float32, eps float64) (y []float64, mean, rstd float64) {
	for _, v := range x {
		mean += float64(v)
	}
	mean /= float64(len(x))
	var q float64
	for _, v := range x {
		d := float64(v) - mean
		q += d * d
	}
	rstd = 1 / math.Sqrt(q/float64(len(x))+eps)
	y = make([]float64, len(x))
	for i, v := range x {
		y[i] = (float64(v)-mean)*rstd*float64(w[i]) + float64(b[i])
	}
	return y, mean, rstd
}

// LayerNormBackward is the float64 backward of layer norm on x (N samples of M), given dy: with
// xhat = (x - mean) rstd and g = dy w, dx = rstd (g - mean(g) - xhat mean(g xhat)) per sample,
// dw = sum_n dy xhat and db = sum_n dy. TestLayerNormBackwardByFiniteDifferences proves it.
func LayerNormBackward(x, w, dy []float32, N, M int, eps float64) (dx, dw, db []float64) {
	dx = make([]float64, N*M)
	dw = make([]float64, M)
	db = make([]float64, M)
	xhat := make([]float64, M)
	for n := 0; n < N; n++ {
		xs, ds := x[n*M:(n+1)*M], dy[n*M:(n+1)*M]
		_, mean, rstd := LayerNormSample(xs, w, w, eps) // the statistics (y is not needed)
		var c1, c2 float64
		for i := range xs {
			xhat[i] = (float64(xs[i]) - mean) * rstd
			g := float64(ds[i]) * float64(w[i])
			c1 += g
			c2 += g * xhat[i]
			dw[i] += float64(ds[i]) * xhat[i]
			db[i] += float64(ds[i])
		}
		c1 /= float64(M)
		c2 /= float64(M)
		for i := range xs {
			dx[n*M+i] = rstd * (float64(ds[i])*float64(w[i]) - c1 - xhat[i]*c2)
		}
	}
	return dx, dw, db
}

// LNBackwardTolerance is the check of the layer norm backward on x, w, dy (N samples of M):
// check.FP32 with an absolute floor for tiny or zero references. dx = rstd (dy w - mean(dy w) -
// xhat mean(dy w xhat)) combines three terms of RMS size T = rms(dy) rms(w) (|xhat| has RMS 1) and
// two means of M such terms: its float32 rounding has a standard deviation of about
// rstd (SumFloor(u, 3, T) + 2 SumFloor(u, M, T) / M), with the largest rstd of the batch; dw and db
// sum N terms of RMS rms(dy): SumFloor(u, N, rms(dy)). The floor is the larger. At M = 1 every
// dx and dw is exactly 0 (xhat = 0, dy w - mean(dy w) = 0) while rstd = 1/sqrt(eps) = 316 scales the
// kernel's last rounding (measured 1.2e-6): without the floor the relative L2 error is infinite.
// For samples of uniform values (rstd ~ 1.7) the floor stays below FP32's Abs.
func LNBackwardTolerance(x, w, dy []float32, N, M int) check.Tolerance {
	if N == 0 || M == 0 {
		return check.FP32
	}
	rmsOf := func(v []float32) float64 {
		var s float64
		for _, a := range v {
			s += float64(a) * float64(a)
		}
		return math.Sqrt(s / float64(len(v)))
	}
	var rstdMax float64
	for n := 0; n < N; n++ {
		_, _, rstd := LayerNormSample(x[n*M:(n+1)*M], w, w, LNEps)
		rstdMax = math.Max(rstdMax, rstd)
	}
	T := rmsOf(dy) * rmsOf(w)
	dx := rstdMax * (check.SumFloor(check.U32, 3, T) + 2*check.SumFloor(check.U32, M, T)/float64(M))
	sums := check.SumFloor(check.U32, N, rmsOf(dy))
	return check.FP32.WithFloor(math.Max(dx, sums),
		fmt.Sprintf("dx: rstd <= %.3g times three terms and two means of RMS %.2g; dw, db: sums of N = %d terms", rstdMax, T, N))
}

// shape prints rows x cols.
func shape(rows, cols int) string { return fmt.Sprintf("(%d, %d)", rows, cols) }

package hostile

import (
	"math"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/lessons/matmul"
	"github.com/cudalessons/cudalessons/lessons/trilinear"
)

// absolute is |x| element by element: the inputs on which the reference gives each element's sum
// of |terms| (Output.Mag).
func absolute(x []float32) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(math.Abs(float64(v)))
	}
	return out
}

// productOutput is an output that is the product of a (m x k) and b (k x n) computed by a step of
// dtype: the float64 product, judged by lesson 03's element bound (matmul.ElementTol) on |a|·|b|.
func productOutput(name string, a []float32, m, k int, b []float32, n int, dtype string) Output {
	want, mag := product(a, m, k, b, n), product(absolute(a), m, k, absolute(b), n)
	bound := make([]float64, len(mag))
	for i, v := range mag {
		bound[i] = matmul.ElementTol(dtype, k, v)
	}
	return Output{Name: name, Want: want, Mag: mag, Bound: bound, Tol: matmul.Tolerance(dtype, k), Cols: n}
}

// sumBounds are the element bounds of a float32 sum per element: element i adds terms(i) products
// (plus one more addition when extra, a bias or an eps) with absolute values summing to mag[i],
// each rounding counted as lesson 03's accumulator counts it for dtype (matmul.ElementTol).
func sumBounds(dtype string, mag []float64, terms func(i int) int, extra bool) []float64 {
	out := make([]float64, len(mag))
	for i, v := range mag {
		n := terms(i)
		if extra {
			n++
		}
		out[i] = matmul.ElementTol(dtype, max(n, 1), v)
	}
	return out
}

// featsRoundings is how many float32 roundings a corner weight times the upstream gradient takes
// in lesson 07's kernels (corner_weight in kernels/trilinear): per coordinate, clamp(p) + 1 and
// 1 - u (the halving is exact), two for each of the three factors; two products of the three
// factors; the product with g. By the rounding model of a formula of sums and products (each
// operation's error at most u times its operands' absolute value), the error is at most 9u times
// the formula evaluated on absolute values: |g| times the product of (1 + |u|) or |u| per factor,
// where |u| = (|clamp(p)| + 1) / 2.
const featsRoundings = 9

// featsBound is dfeats' sum of |terms| and element bound: W_k(points[n]) g[n][f] evaluated on
// absolute values (featsRoundings), each point's (8, F) block as BackwardFeats lays it out.
func featsBound(s trilinear.Shape, points, g []float64) (mag, bound []float64) {
	mag = make([]float64, 0, 8*s.N*s.F)
	for n := 0; n < s.N; n++ {
		for _, w := range absWeights(points[3*n : 3*n+3]) {
			for f := 0; f < s.F; f++ {
				mag = append(mag, w*math.Abs(g[n*s.F+f]))
			}
		}
	}
	bound = make([]float64, len(mag))
	for i, v := range mag {
		// Three products of factors and the product with g may fall among the subnormals.
		bound[i] = check.SumBound(featsRoundings, check.U32, v, 3)
	}
	return mag, bound
}

// outRoundings is how many float32 roundings the forward's out takes in lesson 07's kernels: the
// corner weight's eight (featsRoundings less the product with g), then the eight fused
// multiply-adds that sum w_k f_k, one rounding each. By the rounding model the error is at most
// 16u times the sum of |w_k| |f_k|, the weights evaluated on absolute values as in featsBound.
const outRoundings = featsRoundings - 1 + 8

// outBound is out's sum of |terms| and element bound: sum over the 8 corners of |W_k(points[n])|
// (on absolute values) times |feats[n][k][f]|. Feats that cancel across corners (constant rows of
// opposite signs) leave out far smaller than its terms: an elementwise tolerance on out alone
// would hold the kernel to a precision float32 weights cannot give.
func outBound(s trilinear.Shape, feats, points []float64) (mag, bound []float64) {
	mag = make([]float64, s.N*s.F)
	for n := 0; n < s.N; n++ {
		for k, w := range absWeights(points[3*n : 3*n+3]) {
			for f := 0; f < s.F; f++ {
				mag[n*s.F+f] += w * math.Abs(feats[(n*8+k)*s.F+f])
			}
		}
	}
	bound = make([]float64, len(mag))
	for i, v := range mag {
		// Two products of factors in each of the 8 weights, and each weight times its feature.
		bound[i] = check.SumBound(outRoundings, check.U32, v, 24)
	}
	return mag, bound
}

// absWeights are a point's 8 corner weights evaluated on absolute values, the rounding model's
// magnitude of each: per coordinate |u| = (|clamp(p)| + 1) / 2, and the factor |u| or 1 + |u|.
func absWeights(p []float64) [8]float64 {
	var ua [3]float64
	for i := range ua {
		ua[i] = (math.Abs(trilinear.Clamp(p[i])) + 1) / 2
	}
	var ws [8]float64
	for k := range ws {
		w := 1.0
		for i, bit := range []int{k >> 2 & 1, k >> 1 & 1, k & 1} {
			if bit == 1 {
				w *= ua[i]
			} else {
				w *= 1 + ua[i]
			}
		}
		ws[k] = w
	}
	return ws
}

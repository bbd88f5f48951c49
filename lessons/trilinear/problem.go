package trilinear

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
)

// ID names the lesson's results and notebook.
const ID = "07_trilinear"

// Shape is the op's size: N points (cells), each with 8 corner rows of F features.
// feats is (N, 8, F), points (N, 3), out (N, F), all row-major.
type Shape struct{ N, F int }

// ArticleShape is the article's workload: N = 65536, F = 256 (feats 512 MiB in float32).
var ArticleShape = Shape{N: 65536, F: 256}

// MaxElems bounds N*8*F: the kernels index with 64-bit offsets, but a launch's int arguments and the
// host's slices must hold N and F, and feats must fit in memory.
const MaxElems = 1 << 40

// String prints the shape the way the tables do.
func (s Shape) String() string { return fmt.Sprintf("N=%d F=%d", s.N, s.F) }

// Validate refuses shapes no step can take, before any launch. N = 0 or F = 0 is valid (an empty
// op: nothing to launch); negative sizes and sizes past the int32 arguments are not.
func (s Shape) Validate() error {
	if s.N < 0 || s.F < 0 {
		return fmt.Errorf("trilinear: %v: N and F must not be negative", s)
	}
	if s.N > math.MaxInt32 || s.F > math.MaxInt32 {
		return fmt.Errorf("trilinear: %v: N and F are passed as 32-bit ints, at most %d", s, math.MaxInt32)
	}
	if float64(s.N)*8*float64(s.F) > MaxElems {
		return fmt.Errorf("trilinear: %v: feats would have %.3g elements, over the limit of 2^40", s, float64(s.N)*8*float64(s.F))
	}
	return nil
}

// Empty reports whether the op has nothing to compute (N or F zero).
func (s Shape) Empty() bool { return s.N == 0 || s.F == 0 }

// FeatsLen is the element count of feats (and dfeats): N*8*F.
func (s Shape) FeatsLen() int { return s.N * 8 * s.F }

// OutLen is the element count of out (and of the upstream gradient and the target): N*F.
func (s Shape) OutLen() int { return s.N * s.F }

// PointsLen is the element count of points (and dpoints): N*3.
func (s Shape) PointsLen() int { return s.N * 3 }

// Clamp is the lesson's rule for points outside [-1, 1]: each coordinate is clamped (the point moves
// to the nearest face of its cell), and the gradient of a clamped coordinate is zero. NaN stays NaN.
// The article's kernel (step 1) does not clamp: it extrapolates.
func Clamp(x float64) float64 {
	switch {
	case x < -1:
		return -1
	case x > 1:
		return 1
	}
	return x
}

// inside is 1 where the coordinate was not clamped (|x| <= 1, or NaN), else 0: the clamp's derivative.
func inside(x float64) float64 {
	if x < -1 || x > 1 {
		return 0
	}
	return 1
}

// Weights are the eight corner weights of a point, corner k = 4*iu + 2*iv + iw, with u, v, w =
// (clamped coordinate + 1) / 2: the weight is the product of u or 1-u, v or 1-v, w or 1-w.
func Weights(p []float64) [8]float64 {
	u, v, w := (Clamp(p[0])+1)/2, (Clamp(p[1])+1)/2, (Clamp(p[2])+1)/2
	var out [8]float64
	for k := 0; k < 8; k++ {
		a, b, c := 1-u, 1-v, 1-w
		if k&4 != 0 {
			a = u
		}
		if k&2 != 0 {
			b = v
		}
		if k&1 != 0 {
			c = w
		}
		out[k] = a * b * c
	}
	return out
}

// Forward is the float64 reference: out[n][f] = sum_k W_k(points[n]) * feats[n][k][f].
func Forward(s Shape, feats, points []float64) []float64 {
	return ForwardRows(s, feats, points, nil)
}

// ForwardRows is Forward on the listed points only (all when rows is nil), concatenated.
func ForwardRows(s Shape, feats, points []float64, rows []int) []float64 {
	rows = rowsOrAll(s, rows)
	out := make([]float64, 0, len(rows)*s.F)
	for _, n := range rows {
		w := Weights(points[3*n : 3*n+3])
		base := n * 8 * s.F
		for f := 0; f < s.F; f++ {
			var o float64
			for k := 0; k < 8; k++ {
				o += w[k] * feats[base+k*s.F+f]
			}
			out = append(out, o)
		}
	}
	return out
}

// BackwardFeats is dL/dfeats for the upstream gradient g (N, F): W_k(points[n]) * g[n][f], on the
// listed points (all when rows is nil), each point's (8, F) block concatenated.
func BackwardFeats(s Shape, points, g []float64, rows []int) []float64 {
	rows = rowsOrAll(s, rows)
	out := make([]float64, 0, len(rows)*8*s.F)
	for _, n := range rows {
		w := Weights(points[3*n : 3*n+3])
		for k := 0; k < 8; k++ {
			for f := 0; f < s.F; f++ {
				out = append(out, w[k]*g[n*s.F+f])
			}
		}
	}
	return out
}

// BackwardPoints is dL/dpoints for the upstream gradient g, on the listed points (all when rows is
// nil), three values per point: 1/2 * sum_f g[n][f] * d out[n][f] / d(u, v, w), zero for a clamped
// coordinate (at exactly +-1 the inside derivative, a one-sided one).
func BackwardPoints(s Shape, feats, points, g []float64, rows []int) []float64 {
	rows = rowsOrAll(s, rows)
	out := make([]float64, 0, 3*len(rows))
	for _, n := range rows {
		p := points[3*n : 3*n+3]
		uvw := [3]float64{(Clamp(p[0]) + 1) / 2, (Clamp(p[1]) + 1) / 2, (Clamp(p[2]) + 1) / 2}
		var d [3]float64
		for f := 0; f < s.F; f++ {
			gf := g[n*s.F+f]
			for k := 0; k < 8; k++ {
				x := feats[n*8*s.F+k*s.F+f]
				bits := [3]int{k >> 2 & 1, k >> 1 & 1, k & 1}
				for j := 0; j < 3; j++ { // d W_k / d uvw[j]: the other two factors, signed
					prod := 1.0
					for i := 0; i < 3; i++ {
						switch {
						case i == j && bits[i] == 1:
						case i == j:
							prod = -prod
						case bits[i] == 1:
							prod *= uvw[i]
						default:
							prod *= 1 - uvw[i]
						}
					}
					d[j] += gf * prod * x
				}
			}
		}
		for j := 0; j < 3; j++ {
			out = append(out, 0.5*inside(p[j])*d[j])
		}
	}
	return out
}

// TrainLoss is the fused step's loss, 1/2 * sum (out - target)^2, per point (on the listed rows, all
// when nil), and its gradient with respect to out, r = out - target (N, F).
func TrainLoss(s Shape, feats, points, target []float64, rows []int) (loss, r []float64) {
	rows = rowsOrAll(s, rows)
	out := ForwardRows(s, feats, points, rows)
	r = make([]float64, s.OutLen())
	for i, n := range rows {
		var l float64
		for f := 0; f < s.F; f++ {
			d := out[i*s.F+f] - target[n*s.F+f]
			r[n*s.F+f] = d
			l += 0.5 * d * d
		}
		loss = append(loss, l)
	}
	return loss, r
}

func rowsOrAll(s Shape, rows []int) []int {
	if rows != nil {
		return rows
	}
	all := make([]int, s.N)
	for i := range all {
		all[i] = i
	}
	return all
}

// Inputs are the op's inputs as the article draws them: feats uniform in [0, 1) (torch.rand),
// points uniform in [-1, 1], an upstream gradient g and a target uniform in [-1, 1) and [0, 1).
type Inputs struct {
	Shape                    Shape
	Feats, Points, G, Target []float32
}

// NewInputs draws fresh inputs from a seeded generator. lo..hi is the range of the points'
// coordinates: [-1, 1] for the article, wider to exercise the clamp, narrower for a gradient check
// that must not cross a clamp's kink.
func NewInputs(s Shape, seed uint64, lo, hi float64) Inputs {
	r := rand.New(rand.NewPCG(seed, 0x7717))
	in := Inputs{Shape: s, Feats: make([]float32, s.FeatsLen()), Points: make([]float32, s.PointsLen()),
		G: make([]float32, s.OutLen()), Target: make([]float32, s.OutLen())}
	for i := range in.Feats {
		in.Feats[i] = r.Float32()
	}
	for i := range in.Points {
		in.Points[i] = float32(lo + (hi-lo)*r.Float64())
	}
	for i := range in.G {
		in.G[i] = 2*r.Float32() - 1
		in.Target[i] = r.Float32()
	}
	return in
}

// SampleRows returns k distinct random point indices, sorted (all points when k <= 0 or k >= N).
func SampleRows(s Shape, k int, seed uint64) []int {
	if k <= 0 || k >= s.N {
		return rowsOrAll(s, nil)
	}
	r := rand.New(rand.NewPCG(seed, 0x5a3))
	picked := map[int]bool{}
	for len(picked) < k {
		picked[r.IntN(s.N)] = true
	}
	out := make([]int, 0, k)
	for n := 0; n < s.N; n++ {
		if picked[n] {
			out = append(out, n)
		}
	}
	return out
}

// ForwardWork is the forward's minimum DRAM traffic (every input read once, every output written
// once; elem is the bytes of a feats element) and its useful FLOPs (a multiply-add counts 2).
func ForwardWork(s Shape, elem int) bench.Work {
	nf := float64(s.N) * float64(s.F)
	return bench.Work{Bytes: float64(elem)*9*nf + 12*float64(s.N), FLOPs: 16 * nf}
}

// BackwardFeatsWork: read g and the points, write dfeats.
func BackwardFeatsWork(s Shape) bench.Work {
	nf := float64(s.N) * float64(s.F)
	return bench.Work{Bytes: 4*9*nf + 12*float64(s.N), FLOPs: 8 * nf}
}

// BackwardPointsWork: read feats, g and the points, write dpoints.
func BackwardPointsWork(s Shape) bench.Work {
	nf := float64(s.N) * float64(s.F)
	return bench.Work{Bytes: 4*9*nf + 24*float64(s.N), FLOPs: 3 * 16 * nf}
}

// TrainWork is the fused training step: read feats, target and the points, write dfeats, dpoints and
// the per-point loss.
func TrainWork(s Shape) bench.Work {
	nf := float64(s.N) * float64(s.F)
	return bench.Work{Bytes: 4*(8+1+8)*nf + 28*float64(s.N), FLOPs: (16 + 8 + 48 + 3) * nf}
}

// Tolerances, per output and dtype (never widened to let a kernel pass).
var (
	// ForwardTol: eight float32 products summed, one rounding each: float32 bounds.
	ForwardTol = check.FP32
	// PointsTol: a sum of 8F terms of both signs per point, in float32: check.FP32, with the
	// absolute floor that PointsTolerance derives from F and the inputs' sizes.
	PointsTol = check.FP32
	// FeatsTol: one product of two float32 roundings per element (the weight, then the product).
	FeatsTol = check.FP32
)

// PointsTolerance is the check of the points gradient for F channels, upstream gradient g and
// feats: PointsTol with an absolute floor (check.SumFloor) for a float32 sum of n = 8F terms
// 0.5 g_f dW_k x_kf of RMS size 0.5 rms(g) rms(feats) (|dW_k/duvw| <= 1). The float32 error of a
// correct kernel grows with F while the result grows only like sqrt(F) (terms of both signs), so a
// bound fixed for ~1000 terms fails correct kernels at long F: at F = 1048561 one measured
// 1.46e-5 relative L2 against FP32's 1e-5. The floor is the reduction-length bound lesson 03 derives
// for K (matmul.ErrorModel); below F ~ 16 it is under FP32's Abs and changes nothing.
func PointsTolerance(F int, feats, g []float64) check.Tolerance {
	term := 0.5 * rms(g) * rms(feats)
	return PointsTol.WithFloor(check.SumFloor(check.U32, 8*F, term),
		fmt.Sprintf("float32 sum of 8F = %d terms of RMS %.2g", 8*F, term))
}

func rms(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s / float64(max(len(x), 1)))
}

// widen converts float32 inputs to the float64 the references take.
func widen(x []float32) []float64 { return check.Float64s(x) }

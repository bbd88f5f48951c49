package rwkv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/cudalessons/cudalessons/helpers/parallel"
)

// Shape is the size of one time-mix problem: B batch rows, C channels, T time steps. k and out are
// (B, C, T) row-major, w is (C, T): row r = b*C + c of k is the sequence of channel c in batch b.
type Shape struct{ B, C, T int }

// ArticleShape is the article's benchmark shape (RWKV-CUDA's run.py): B=32, C=768, T=768.
var ArticleShape = Shape{B: 32, C: 768, T: 768}

// Eps is the article's constant added to every output.
const Eps = 0.1

// ArticleSeed is the seed the article's script sets (torch.manual_seed(42)); our generator is not
// PyTorch's, so the values differ, but the distribution (uniform in [0, 1)) is the same.
const ArticleSeed = 42

// String prints the shape as the article writes it.
func (s Shape) String() string { return fmt.Sprintf("B=%d C=%d T=%d", s.B, s.C, s.T) }

// Rows is the number of (b, c) sequences, B*C.
func (s Shape) Rows() int { return s.B * s.C }

// Len is the number of elements of k and out, B*C*T.
func (s Shape) Len() int { return s.B * s.C * s.T }

// MaxElems is the largest B*C*T the kernels take: they index with 32-bit ints.
const MaxElems = math.MaxInt32

// Validate refuses empty or negative shapes and shapes whose element count overflows the
// kernels' 32-bit indices.
func (s Shape) Validate() error {
	if s.B < 1 || s.C < 1 || s.T < 1 {
		return fmt.Errorf("rwkv: shape %v: B, C and T must all be at least 1", s)
	}
	if int64(s.B)*int64(s.C)*int64(s.T) > MaxElems {
		return fmt.Errorf("rwkv: shape %v has %d elements, over the kernels' 32-bit index limit of %d", s, int64(s.B)*int64(s.C)*int64(s.T), int64(MaxElems))
	}
	return nil
}

// MACs is the forward's multiply-adds: each of the B*C rows sums t+1 products at step t, so
// B*C*T(T+1)/2 (7.26 G at the article's shape).
func (s Shape) MACs() float64 { return float64(s.B) * float64(s.C) * float64(s.T) * float64(s.T+1) / 2 }

// ForwardFLOPs is two FLOPs per multiply-add (14.5 GFLOP at the article's shape).
func (s Shape) ForwardFLOPs() float64 { return 2 * s.MACs() }

// BackwardFLOPs is dk and dw, each as much work as the forward.
func (s Shape) BackwardFLOPs() float64 { return 4 * s.MACs() }

// ForwardBytes is the forward's minimum DRAM traffic: read w and k, write out, 4 bytes each.
func (s Shape) ForwardBytes() float64 { return 4 * (float64(s.C*s.T) + 2*float64(s.Len())) }

// BackwardBytes is the backward's minimum traffic: read w, k and g, write dk and dw.
func (s Shape) BackwardBytes() float64 { return 4 * (2*float64(s.C*s.T) + 3*float64(s.Len())) }

// Uniform returns n values uniform in [0, 1), like torch.rand, from a seeded generator.
func Uniform(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 0x7257a1))
	x := make([]float32, n)
	for i := range x {
		x[i] = r.Float32()
	}
	return x
}

// Inputs draws the article's inputs for shape s: w (C*T) and k (B*C*T), uniform in [0, 1).
func Inputs(s Shape, seed uint64) (w, k []float32) {
	return Uniform(s.C*s.T, seed), Uniform(s.Len(), seed+1_000_003)
}

// Upstream draws an upstream gradient g = dL/dout (B*C*T), uniform in [0, 1), for the backward.
func Upstream(s Shape, seed uint64) []float32 { return Uniform(s.Len(), seed+2_000_003) }

// Real is an element type the references take: float32 (what the GPU sees) or float64 (for the
// finite-difference checks).
type Real interface{ ~float32 | ~float64 }

// AllRows is every row index 0..B*C-1.
func AllRows(s Shape) []int {
	rows := make([]int, s.Rows())
	for i := range rows {
		rows[i] = i
	}
	return rows
}

// SampleRows picks n distinct rows (b*C + c) at random, sorted; all rows when n >= B*C. The first
// and last rows are always included, so edges of the index space are covered.
func SampleRows(s Shape, n int, seed uint64) []int { return sample(s.Rows(), n, seed) }

// SampleChannels picks n distinct channels at random, sorted, always with the first and last.
func SampleChannels(s Shape, n int, seed uint64) []int { return sample(s.C, n, seed) }

func sample(total, n int, seed uint64) []int {
	if n >= total {
		all := make([]int, total)
		for i := range all {
			all[i] = i
		}
		return all
	}
	r := rand.New(rand.NewPCG(seed, 0x5a3e))
	pick := map[int]bool{0: true, total - 1: true}
	for len(pick) < n {
		pick[r.IntN(total)] = true
	}
	out := make([]int, 0, len(pick))
	for i := range pick {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// Gather copies the rows of length T of x (row-major, any number of rows) into float64, in order.
func Gather[F Real](x []F, T int, rows []int) []float64 {
	out := make([]float64, len(rows)*T)
	for i, r := range rows {
		for t := 0; t < T; t++ {
			out[i*T+t] = float64(x[r*T+t])
		}
	}
	return out
}

// ForwardRows is the float64 reference of the forward on the given rows (nil: all rows):
//
//	out[b][c][t] = eps + sum_{u=0..t} w[c][(T-1)-(t-u)] * k[b][c][u]
//
// It returns len(rows)*T values, row after row. The rows run in parallel.
func ForwardRows[F Real](s Shape, w, k []F, eps float64, rows []int) []float64 {
	if rows == nil {
		rows = AllRows(s)
	}
	T := s.T
	out := make([]float64, len(rows)*T)
	parallel.For(len(rows), func(i int) {
		r := rows[i]
		c := r % s.C
		wr := make([]float64, T)
		kr := make([]float64, T)
		for j := 0; j < T; j++ {
			wr[j] = float64(w[c*T+j])
			kr[j] = float64(k[r*T+j])
		}
		o := out[i*T : (i+1)*T]
		for t := 0; t < T; t++ {
			// u runs 0..t and w's index (T-1)-(t-u) runs (T-1-t)..(T-1) with it.
			ws := wr[T-1-t:]
			var sum float64
			for u, kv := range kr[:t+1] {
				sum += ws[u] * kv
			}
			o[t] = eps + sum
		}
	})
	return out
}

// Forward is ForwardRows on every row: the full (B, C, T) output in float64.
func Forward[F Real](s Shape, w, k []F, eps float64) []float64 { return ForwardRows(s, w, k, eps, nil) }

// BackwardDKRows is the float64 reference of dk = dL/dk on the given rows (nil: all rows), for an
// upstream gradient g = dL/dout:
//
//	dk[b][c][u] = sum_{t=u..T-1} g[b][c][t] * w[c][(T-1)-(t-u)]
func BackwardDKRows[F Real](s Shape, w, g []F, rows []int) []float64 {
	if rows == nil {
		rows = AllRows(s)
	}
	T := s.T
	out := make([]float64, len(rows)*T)
	parallel.For(len(rows), func(i int) {
		r := rows[i]
		c := r % s.C
		wr := make([]float64, T)
		gr := make([]float64, T)
		for j := 0; j < T; j++ {
			wr[j] = float64(w[c*T+j])
			gr[j] = float64(g[r*T+j])
		}
		o := out[i*T : (i+1)*T]
		for u := 0; u < T; u++ {
			// t runs u..T-1, and w's index (T-1)-(t-u) runs down from T-1 to u.
			var sum float64
			for t := u; t < T; t++ {
				sum += gr[t] * wr[T-1-(t-u)]
			}
			o[u] = sum
		}
	})
	return out
}

// BackwardDK is BackwardDKRows on every row.
func BackwardDK[F Real](s Shape, w, g []F) []float64 { return BackwardDKRows(s, w, g, nil) }

// BackwardDWChannels is the float64 reference of dw = dL/dw on the given channels (nil: all):
//
//	dw[c][j] = sum_b sum_{t=s..T-1} g[b][c][t] * k[b][c][t-s],   s = (T-1) - j
//
// (the sum over b of the per-row dw the original computes). It returns len(channels)*T values.
func BackwardDWChannels[F Real](s Shape, k, g []F, channels []int) []float64 {
	if channels == nil {
		channels = make([]int, s.C)
		for i := range channels {
			channels[i] = i
		}
	}
	T := s.T
	out := make([]float64, len(channels)*T)
	parallel.For(len(channels), func(i int) {
		c := channels[i]
		o := out[i*T : (i+1)*T]
		kr := make([]float64, T)
		gr := make([]float64, T)
		for b := 0; b < s.B; b++ {
			r := b*s.C + c
			for j := 0; j < T; j++ {
				kr[j] = float64(k[r*T+j])
				gr[j] = float64(g[r*T+j])
			}
			for j := 0; j < T; j++ {
				sh := T - 1 - j
				var sum float64
				for t := sh; t < T; t++ {
					sum += gr[t] * kr[t-sh]
				}
				o[j] += sum
			}
		}
	})
	return out
}

// BackwardDW is BackwardDWChannels on every channel: the full (C, T) dw.
func BackwardDW[F Real](s Shape, k, g []F) []float64 { return BackwardDWChannels(s, k, g, nil) }

// Loss is sum(g * out) in float64 for the forward on w and k: the scalar whose gradients with
// respect to k and w are BackwardDK and BackwardDW. The finite-difference checks use it.
func Loss[F Real](s Shape, w, k, g []F, eps float64) float64 {
	out := Forward(s, w, k, eps)
	var l float64
	for i, o := range out {
		l += float64(g[i]) * o
	}
	return l
}

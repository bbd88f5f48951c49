// Package matmul is lesson 03, matrix multiplication: C = A·B in float32, from a naive kernel to
// tensor cores at float32 accuracy, after the KernelBench article (Stanford CRFM), whose generated
// matmul beat cuBLAS on an L40S by splitting each float32 into a high and a low half-precision part
// and running three tensor-core products.
//
// The package holds the problem and its float64 CPU reference (checked on every output of small and
// awkward shapes, on sampled rows, columns and elements of large ones), the ladder of steps (each
// with a plan that refuses what it cannot take before any launch), the general entry point Multiply
// (fastest step that takes the shape, the shared-memory step for any other), the PyTorch (cuBLAS)
// baselines and its error against float64, the KernelBench method (random trials, allclose at 1e-2,
// fast_p), the run that records everything, its tables, figures and targets, and the exercises.
package matmul

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/parallel"
)

// ID names the lesson's results and notebook.
const ID = "03_matmul"

// Shape is a product C (M x N) = A (M x K) · B (K x N), all row-major float32.
type Shape struct{ M, N, K int }

// Article is the article's problem: A and B 4096 x 4096.
var Article = Shape{M: 4096, N: 4096, K: 4096}

// NonSquare is the lesson's awkward shape: no dimension a multiple of any tile or vector width.
var NonSquare = Shape{M: 1000, N: 3000, K: 777}

// Awkward are the shapes off the tiles on which the lesson times Multiply's pick beside cuBLAS: the
// non-square one, the article's size minus and plus one (4095^3; 4097 x 4097 x 1, a product that is
// all edges and output), a small cube, and long thin ones.
var Awkward = []Shape{NonSquare, {M: 4095, N: 4095, K: 4095}, {M: 4097, N: 4097, K: 1}, {M: 255, N: 255, K: 255},
	{M: 513, N: 129, K: 1025}, {M: 4097, N: 64, K: 16}}

func (s Shape) String() string { return fmt.Sprintf("%dx%dx%d", s.M, s.N, s.K) }

// MaxElems is the most elements one matrix may have: the kernels index with 32-bit ints.
const MaxElems = math.MaxInt32

// Validate refuses shapes no kernel can take: a zero or negative dimension, or a matrix over
// MaxElems elements.
func (s Shape) Validate() error {
	if s.M < 1 || s.N < 1 || s.K < 1 {
		return fmt.Errorf("matmul %v: M, N and K must all be at least 1 (an empty product has nothing to compute: handle it before calling)", s)
	}
	for _, m := range []struct {
		name string
		r, c int
	}{{"A", s.M, s.K}, {"B", s.K, s.N}, {"C", s.M, s.N}} {
		if int64(m.r)*int64(m.c) > MaxElems {
			return fmt.Errorf("matmul %v: %s is %d x %d = %d elements, over the kernels' limit of %d (32-bit indexing)",
				s, m.name, m.r, m.c, int64(m.r)*int64(m.c), int64(MaxElems))
		}
	}
	return nil
}

// ShapeOf is the product's shape from the shapes of A (aRows x aCols) and B (bRows x bCols), or an
// error when the inner dimensions differ.
func ShapeOf(aRows, aCols, bRows, bCols int) (Shape, error) {
	if aCols != bRows {
		return Shape{}, fmt.Errorf("matmul: inner dimensions differ: A is %d x %d and B is %d x %d (A's columns must equal B's rows)", aRows, aCols, bRows, bCols)
	}
	s := Shape{M: aRows, N: bCols, K: aCols}
	return s, s.Validate()
}

// FLOPs is 2 M N K: one multiply and one add per term.
func (s Shape) FLOPs() float64 { return 2 * float64(s.M) * float64(s.N) * float64(s.K) }

// Bytes is the least DRAM traffic: A and B read once, C written once, 4 bytes each.
func (s Shape) Bytes() float64 {
	return 4 * (float64(s.M)*float64(s.K) + float64(s.K)*float64(s.N) + float64(s.M)*float64(s.N))
}

// Work is the product's useful work for rates and the roofline.
func (s Shape) Work() bench.Work { return bench.Work{FLOPs: s.FLOPs(), Bytes: s.Bytes()} }

// Intensity is FLOPs per byte of the least traffic: 683 at 4096^3, far right of any GPU's ridge.
func (s Shape) Intensity() float64 { return s.FLOPs() / s.Bytes() }

// Inputs draws A (M x K) and B (K x N) uniformly in [-1, 1) from seed. Signed inputs matter: with
// positive ones every error of a product is averaged away in a long positive sum, and even a
// half-precision product would pass a float32 check.
func Inputs(s Shape, seed uint64) (a, b []float32) {
	r := rand.New(rand.NewPCG(seed, 0x3a7))
	a, b = make([]float32, s.M*s.K), make([]float32, s.K*s.N)
	for i := range a {
		a[i] = 2*r.Float32() - 1
	}
	for i := range b {
		b[i] = 2*r.Float32() - 1
	}
	return a, b
}

// Sample is the set of output elements a check compares: their flat indices (row*N + col), sorted.
type Sample struct {
	Idx  []int
	What string // "all 12 elements", "4 rows, 2 columns and 512 random elements"
}

// FullCheckMACs is the largest product checked on every output: above it, the float64 reference
// runs on a sample (2^28 multiply-adds take a fraction of a second on a few cores).
const FullCheckMACs = 1 << 28

// SampleOf picks the elements to check: every one when M*N*K <= FullCheckMACs; otherwise rows full
// rows, cols full columns (always including the first and last) and n random elements.
func SampleOf(s Shape, rows, cols, n int, seed uint64) Sample {
	total := s.M * s.N
	if float64(s.M)*float64(s.N)*float64(s.K) <= FullCheckMACs {
		idx := make([]int, total)
		for i := range idx {
			idx[i] = i
		}
		return Sample{Idx: idx, What: fmt.Sprintf("all %d elements", total)}
	}
	r := rand.New(rand.NewPCG(seed, 0x5a3e))
	pick := map[int]bool{}
	for _, row := range check.Pick(r, s.M, rows) {
		for j := 0; j < s.N; j++ {
			pick[row*s.N+j] = true
		}
	}
	for _, col := range check.Pick(r, s.N, cols) {
		for i := 0; i < s.M; i++ {
			pick[i*s.N+col] = true
		}
	}
	for i := 0; i < n; i++ {
		pick[r.IntN(total)] = true
	}
	idx := make([]int, 0, len(pick))
	for i := range pick {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	return Sample{Idx: idx, What: fmt.Sprintf("%d rows, %d columns and %d random elements (%d outputs)", min(rows, s.M), min(cols, s.N), n, len(idx))}
}

// Reference is the float64 product at the sampled elements (in the order of idx): for each element
// the dot product of its row of A and its column of B, summed in float64. Rows run in parallel.
func Reference(s Shape, a, b []float32, idx []int) []float64 {
	out := make([]float64, len(idx))
	// Group the elements by row, so that each row of A is converted once.
	type span struct{ row, lo, hi int } // idx[lo:hi] are in row
	var spans []span
	for lo := 0; lo < len(idx); {
		row := idx[lo] / s.N
		hi := lo
		for hi < len(idx) && idx[hi]/s.N == row {
			hi++
		}
		spans = append(spans, span{row, lo, hi})
		lo = hi
	}
	parallel.For(len(spans), func(i int) {
		sp := spans[i]
		arow := make([]float64, s.K)
		for k := range arow {
			arow[k] = float64(a[sp.row*s.K+k])
		}
		if sp.hi-sp.lo > s.N/8 { // many elements of this row: one pass over B, row by row
			acc := make([]float64, s.N)
			for k, av := range arow {
				brow := b[k*s.N : (k+1)*s.N]
				for j, bv := range brow {
					acc[j] += av * float64(bv)
				}
			}
			for e := sp.lo; e < sp.hi; e++ {
				out[e] = acc[idx[e]%s.N]
			}
			return
		}
		for e := sp.lo; e < sp.hi; e++ {
			col := idx[e] % s.N
			var sum float64
			for k, av := range arow {
				sum += av * float64(b[k*s.N+col])
			}
			out[e] = sum
		}
	})
	return out
}

// Gather picks the sampled elements of a full output, as float64.
func Gather(c []float32, idx []int) []float64 {
	out := make([]float64, len(idx))
	for i, j := range idx {
		out[i] = float64(c[j])
	}
	return out
}

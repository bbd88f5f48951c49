package matmul

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/cudalessons/cudalessons/helpers/gpu"
)

// The tensor-core splits keep float32's accuracy only inside a window of magnitudes. fp16 holds
// finite values up to 65504 and normal ones down to 2^-14, and the split's lo = fp16((x - hi) 2^11)
// rounds to fp16's subnormal spacing 2^-24 when it falls below 2^-14: an x of magnitude 2^e keeps
// its 22 bits (error at most 2^-22 relative) from e = -14 up to e = 14 (x < 2^15, away from
// 65504). Entries near 2^-30 would come out as zeros, and 1e5 as infinity. So Multiply moves each
// row of A and each column of B by a power of two, exactly, until its largest magnitude lies in
// [2^SplitTop, 2^(SplitTop+1)), runs the split on the moved copies, and moves each element of C
// back by the product of its row's and column's factors (one float32 rounding, only where the
// result is subnormal or overflows, as a float32 product would). A row whose nonzero magnitudes
// span more binades than the window holds cannot be moved into it whole: its smallest entries
// would lose bits.
const (
	// SplitTop is the binade a row's or column's largest magnitude is moved to: [2^14, 2^15).
	SplitTop = 14
	// SplitSpanFP16 is the widest span, in binades (floor(log2 |x|) of the largest nonzero
	// magnitude minus that of the smallest), of a row of A or a column of B that the fp16x3 split
	// keeps at 22 bits once moved: from 2^14 down to 2^-14.
	SplitSpanFP16 = 28
	// SplitSpanTF32 is the same for the 3xTF32 split. TF32 has float32's exponent range, but its lo
	// part and the products hi x lo must stay normal float32 numbers (above 2^-126) to keep their
	// bits: with rows and columns moved to 2^14 and spans of at most 64 binades, every entry is at
	// least 2^-50 and every lo x hi product at least 2^-122.
	SplitSpanTF32 = 64
)

// Ranges are the magnitudes of a product's inputs, row by row of A and column by column of B:
// what decides whether a tensor-core split takes the product, and the powers of two it runs with.
type Ranges struct {
	// RowTop and RowBottom are floor(log2 |x|) of the largest and smallest nonzero magnitude of
	// each row of A (both 0 for a row of zeros); ColTop and ColBottom the same per column of B.
	RowTop, RowBottom, ColTop, ColBottom []int
	// Span is the widest RowTop - RowBottom or ColTop - ColBottom, and Widest says where it is.
	Span   int
	Widest string
	// NonFinite names the first Inf or NaN of A or B, "" when every value is finite.
	NonFinite string
}

// binade is floor(log2 |v|) for a finite nonzero v (subnormals included), and whether v is finite
// and nonzero; nonFinite is true for Inf and NaN.
func binade(v float32) (e int, nonzero, nonFinite bool) {
	b := math.Float32bits(v) & 0x7fffffff
	ex := int(b >> 23)
	switch {
	case b == 0:
		return 0, false, false
	case ex == 0xff:
		return 0, false, true
	case ex == 0: // subnormal: mantissa x 2^-149
		return bits.Len32(b) - 1 - 149, true, false
	}
	return ex - 127, true, false
}

// RangesOf measures A (m x k) and B (k x n), row-major.
func RangesOf(a []float32, m, k int, b []float32, n int) Ranges {
	r := Ranges{RowTop: make([]int, m), RowBottom: make([]int, m), ColTop: make([]int, n), ColBottom: make([]int, n)}
	for i := 0; i < m; i++ {
		top, bottom, seen := 0, 0, false
		for j, v := range a[i*k : (i+1)*k] {
			e, nz, bad := binade(v)
			if bad && r.NonFinite == "" {
				r.NonFinite = fmt.Sprintf("A[%d][%d] = %v", i, j, v)
			}
			if !nz {
				continue
			}
			if !seen {
				top, bottom, seen = e, e, true
			}
			top, bottom = max(top, e), min(bottom, e)
		}
		r.RowTop[i], r.RowBottom[i] = top, bottom
		if top-bottom > r.Span {
			r.Span, r.Widest = top-bottom, fmt.Sprintf("row %d of A", i)
		}
	}
	seen := make([]bool, n)
	for j := 0; j < k; j++ {
		for c, v := range b[j*n : (j+1)*n] {
			e, nz, bad := binade(v)
			if bad && r.NonFinite == "" {
				r.NonFinite = fmt.Sprintf("B[%d][%d] = %v", j, c, v)
			}
			if !nz {
				continue
			}
			if !seen[c] {
				r.ColTop[c], r.ColBottom[c], seen[c] = e, e, true
			}
			r.ColTop[c], r.ColBottom[c] = max(r.ColTop[c], e), min(r.ColBottom[c], e)
		}
	}
	for c := range n {
		if s := r.ColTop[c] - r.ColBottom[c]; s > r.Span {
			r.Span, r.Widest = s, fmt.Sprintf("column %d of B", c)
		}
	}
	return r
}

// Shifts are the powers of two that move each row of A and each column of B to SplitTop: A's row
// i is multiplied by 2^row[i], B's column j by 2^col[j].
func (r Ranges) Shifts() (row, col []int) {
	row, col = make([]int, len(r.RowTop)), make([]int, len(r.ColTop))
	for i, t := range r.RowTop {
		row[i] = SplitTop - t
	}
	for j, t := range r.ColTop {
		col[j] = SplitTop - t
	}
	return row, col
}

// ScaleRows returns a copy of x (rows x cols) with row i multiplied by 2^shift[i]. It is exact for
// every entry whose moved magnitude is a normal float32 (all of them, for a span the splits take).
func ScaleRows(x []float32, rows, cols int, shift []int) []float32 {
	out := make([]float32, len(x))
	for i := range rows {
		f := math.Ldexp(1, shift[i])
		for j := i * cols; j < (i+1)*cols; j++ {
			out[j] = float32(float64(x[j]) * f)
		}
	}
	return out
}

// ScaleCols returns a copy of x (rows x cols) with column j multiplied by 2^shift[j].
func ScaleCols(x []float32, rows, cols int, shift []int) []float32 {
	f := make([]float64, cols)
	for j, s := range shift {
		f[j] = math.Ldexp(1, s)
	}
	out := make([]float32, len(x))
	for i := range rows {
		for j := range cols {
			out[i*cols+j] = float32(float64(x[i*cols+j]) * f[j])
		}
	}
	return out
}

// Unscale moves the product of the moved inputs back in place: c[i][j] (rows x cols) is
// multiplied by 2^-(row[i] + col[j]), in float64 and rounded once to float32.
func Unscale(c []float32, rows, cols int, row, col []int) {
	for i := range rows {
		for j := range cols {
			c[i*cols+j] = float32(math.Ldexp(float64(c[i*cols+j]), -(row[i] + col[j])))
		}
	}
}

// Choice is the step Multiply runs on a product, why, and the powers of two a tensor-core split
// runs with (nil for a float32 step, which takes the inputs as they are).
type Choice struct {
	Step               Step
	Why                string
	RowShift, ColShift []int
}

// Choose is Multiply's dispatch on A (m x k) and B (k x n) on d, before any launch:
//   - an Inf or NaN in A or B: the fastest float32 step (the splits would turn Inf into NaN
//     through Inf - Inf; float32 multiply-adds give IEEE results, as PyTorch's float32 product);
//   - otherwise Pick's step with float32 accuracy: the fp16x3 split where the shape takes it and
//     every row of A and column of B spans at most SplitSpanFP16 binades, else the 3xTF32 split
//     where the spans are at most SplitSpanTF32, each on inputs moved by powers of two (Shifts);
//   - a wider span, or a shape no tensor-core step takes: the float32 step Pick falls back to.
func Choose(s Shape, d gpu.DeviceInfo, a, b []float32) Choice {
	r := RangesOf(a, s.M, s.K, b, s.N)
	if r.NonFinite != "" {
		return Choice{Step: pickFloat32(s, d), Why: r.NonFinite + ": a float32 step (IEEE Inf and NaN; the splits would make NaN of Inf - Inf)"}
	}
	st := Pick(s, d, true, r.Span <= SplitSpanFP16)
	row, col := r.Shifts()
	switch {
	case st.DType == "fp16x3":
		return Choice{Step: st, RowShift: row, ColShift: col,
			Why: fmt.Sprintf("the fp16x3 split on rows of A and columns of B moved by powers of two to 2^%d (widest span %d binades, at most %d)", SplitTop, r.Span, SplitSpanFP16)}
	case st.DType == "3xtf32" && r.Span <= SplitSpanTF32:
		why := fmt.Sprintf("the 3xTF32 split on rows and columns moved by powers of two to 2^%d (widest span %d binades, at most %d)", SplitTop, r.Span, SplitSpanTF32)
		if r.Span > SplitSpanFP16 {
			why += fmt.Sprintf("; not the fp16x3 split: %s spans %d binades, over its %d", r.Widest, r.Span, SplitSpanFP16)
		}
		return Choice{Step: st, RowShift: row, ColShift: col, Why: why}
	case st.DType == "3xtf32":
		return Choice{Step: pickFloat32(s, d), Why: fmt.Sprintf("a float32 step: %s spans %d binades, over the %d the 3xTF32 split keeps at float32 accuracy", r.Widest, r.Span, SplitSpanTF32)}
	}
	return Choice{Step: st, Why: "a float32 step: no tensor-core split takes this shape on this GPU"}
}

// pickFloat32 is Pick restricted to the float32 steps (no tensor cores).
func pickFloat32(s Shape, d gpu.DeviceInfo) Step {
	return pick(s, d, func(st Step) bool { return st.DType != "float32" })
}

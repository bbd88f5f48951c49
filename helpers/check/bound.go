package check

import (
	"fmt"
	"math"
)

// Eta32 is the absolute error of one float32 product that falls among the subnormals: half their
// spacing, 2^-150.
const Eta32 = 0x1p-150

// MaxFloat32 is float32's largest finite value, as float64.
const MaxFloat32 = math.MaxFloat32

// The verdicts of one element under the element bound.
const (
	ElemOK         = iota // within the rules
	ElemNaNMissing        // the reference is NaN, got is not
	ElemInfWrong          // the reference is ±Inf or overflows float32, got is not that infinity (nor NaN where allowed)
	ElemNonFinite         // got is NaN or Inf where the reference is finite in float32 and its terms cannot overflow
	ElemOutOfBound        // got is finite and further than its bound from the reference
	ElemOverflowOK        // got is non-finite where the sum of |terms| passes float32's largest: accepted
)

// JudgeElement is the verdict of one element: got against the float64 reference want, whose terms'
// absolute values sum to mag, with bound the absolute error the rounding model allows.
//
// Element bounds are the worst case of the rounding model, element by element, for inputs of any
// magnitude (the package's statistical tolerances assume inputs near 1).
//
// An element that a float32 kernel computes as a sum of n terms (a dot product, a convolution, a
// scatter-add) carries at most n roundings of its partial sums, each of at most u times the sum of
// the absolute values of the terms added so far, so to first order
//
//	|got - exact| <= c u sum |terms|
//
// where c counts the roundings (lesson 03's ElementBound: the accumulator's additions, plus the
// rounding of each input a tensor-core format takes). Sum |terms| is the same float64 reference
// evaluated on the absolute values of the inputs (|A|·|B| for a product), so the bound follows
// each element, whatever its magnitude and however much its terms cancel. Products that fall among
// float32's subnormals add an absolute error of at most Eta32 each.
//
// Non-finite values are IEEE's, on the reference evaluated in float64 by the op's own formula
// (PyTorch's: a NaN in gives NaN, inf - inf and 0 x inf give NaN):
//   - where the reference is NaN, got must be NaN;
//   - where the reference is ±Inf (an infinite input), got must be that infinity;
//   - where the reference is finite but beyond float32 (the exact answer overflows: its float32
//     rounding is ±Inf), got must not be finite: the infinity of its sign, NaN (overflowed partial
//     sums of both signs meeting), or, where sum |terms| is beyond float32's largest, the other
//     infinity (a float32 accumulation keeps the sign of its first term past the range);
//   - elsewhere (the reference rounded to float32 is finite) got must be finite and within its
//     bound of the reference (the bound counts the output's own rounding to float32, so it is the
//     distance to the exact value that it bounds), except where sum |terms| itself is beyond
//     float32's largest: there a partial sum can overflow in some order of the additions, and ±Inf
//     or NaN is accepted too.
func JudgeElement(got float32, want, mag, bound float64) int {
	g := float64(got)
	w32 := float64(float32(want)) // the reference rounded to float32: past its largest, ±Inf
	switch {
	case math.IsNaN(want):
		if math.IsNaN(g) {
			return ElemOK
		}
		return ElemNaNMissing
	case math.IsInf(want, 0):
		if g == want {
			return ElemOK
		}
		return ElemInfWrong
	case math.IsInf(w32, 0):
		switch {
		case math.IsNaN(g) || g == w32:
			return ElemOK
		case math.IsInf(g, 0) && mag > MaxFloat32:
			// The exact value is past float32's range, so no float32 answer is right; an
			// accumulation in float32 overflows at its first term past the range, and that term's
			// sign, not the exact sum's, decides the infinity it keeps. Loud, not silently wrong.
			return ElemOverflowOK
		}
		return ElemInfWrong
	case math.IsNaN(g) || math.IsInf(g, 0):
		if mag > MaxFloat32 {
			return ElemOverflowOK
		}
		return ElemNonFinite
	case math.Abs(g-want) <= bound:
		return ElemOK
	}
	return ElemOutOfBound
}

// BoundResult is the outcome of CompareBounds.
type BoundResult struct {
	N          int `json:"n"`
	NaNMissing int `json:"nan_missing"` // reference NaN, got not
	InfWrong   int `json:"inf_wrong"`   // reference infinite or overflowing, got not its infinity (or NaN where allowed)
	NonFinite  int `json:"non_finite"`  // got NaN or Inf where nothing can overflow
	Bad        int `json:"bad"`         // finite and out of bound
	// Overflowed counts the non-finite results accepted because their terms' absolute sum passes
	// float32's largest.
	Overflowed int `json:"overflowed,omitempty"`
	FirstBad   int `json:"first_bad"` // index of the first element that fails, -1 if none
	// Worst is the largest |got - want| / bound over the finite elements judged (at most 1 when
	// they all pass); WorstAt is where.
	Worst   float64 `json:"worst"`
	WorstAt int     `json:"worst_at"`
	OK      bool    `json:"ok"`
}

// CompareBounds judges every element of got by JudgeElement against want, with mag and bound per
// element (all the same length as got).
func CompareBounds(got []float32, want, mag, bound []float64) BoundResult {
	r := BoundResult{N: len(want), FirstBad: -1, WorstAt: -1}
	if len(got) != len(want) || len(mag) != len(want) || len(bound) != len(want) {
		r.Bad, r.FirstBad = max(len(got), len(want)), 0
		return r
	}
	for i, w := range want {
		v := JudgeElement(got[i], w, mag[i], bound[i])
		switch v {
		case ElemOK:
			if g, w32 := float64(got[i]), float64(float32(w)); !math.IsNaN(g) && !math.IsInf(g, 0) && !math.IsInf(w32, 0) && !math.IsNaN(w32) {
				if e := math.Abs(g - w); e > 0 {
					if q := e / bound[i]; q > r.Worst {
						r.Worst, r.WorstAt = q, i
					}
				}
			}
			continue
		case ElemOverflowOK:
			r.Overflowed++
			continue
		case ElemNaNMissing:
			r.NaNMissing++
		case ElemInfWrong:
			r.InfWrong++
		case ElemNonFinite:
			r.NonFinite++
		case ElemOutOfBound:
			r.Bad++
			if q := math.Abs(float64(got[i])-w) / bound[i]; q > r.Worst {
				r.Worst, r.WorstAt = q, i
			}
		}
		if r.FirstBad < 0 {
			r.FirstBad = i
		}
	}
	r.OK = r.NaNMissing+r.InfWrong+r.NonFinite+r.Bad == 0
	return r
}

// Err is nil when r passed and otherwise says what failed and where.
func (r BoundResult) Err() error {
	if r.OK {
		return nil
	}
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{
		{r.NaNMissing, "not NaN where the reference is NaN"},
		{r.InfWrong, "not the infinity of the reference's sign (or NaN) where the exact value is infinite or overflows float32"},
		{r.NonFinite, "NaN or Inf where the exact value is finite in float32 and no partial sum can overflow"},
		{r.Bad, fmt.Sprintf("outside the rounding model's bound (worst %.3g x the bound, at %d)", r.Worst, r.WorstAt)},
	} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d elements %s", p.n, r.N, p.what))
		}
	}
	return fmt.Errorf("%s; first at %d", joinParts(parts), r.FirstBad)
}

func joinParts(parts []string) string {
	out := ""
	for i, p := range parts {
		if i > 0 {
			out += "; "
		}
		out += p
	}
	return out
}

// SumBound is the element bound of a float32 sum of terms whose absolute values sum to mag: c
// roundings of at most u (float32's: U32) relative to mag each, and, among the subnormals, at most
// Eta32 for each of its products and for the result's own rounding.
func SumBound(c, u, mag float64, products int) float64 {
	return c*u*mag + float64(products+1)*Eta32
}

package hostile

import (
	"fmt"
	"math"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/check"
)

// The verdicts of a case.
const (
	Pass    = "pass"    // every output within the rules (the package doc)
	Refused = "refused" // the op returned an error naming the reason, and no output
	Fail    = "fail"    // an output differs: Why says what and where
)

// Unavailable is the PyTorch column where python3 has no torch with CUDA.
const Unavailable = "unavailable"

// Judged is the judgement of one output of a case.
type Judged struct {
	Output string `json:"output"`
	N      int    `json:"n"`
	// Rule is how the finite elements were judged: "element bound" (each within the rounding
	// model's bound of its own terms, check.CompareBounds) or the lesson's tolerance's name.
	Rule string `json:"rule"`
	// Bound is the element-bound judgement, for outputs that sum terms (Output.Bound).
	Bound *check.BoundResult `json:"bound,omitempty"`
	// Ref is the tolerance judgement over the elements whose reference is finite in float32, each
	// row (the innermost dimension) divided by the RMS of its reference, so that a tolerance holds
	// the same at every scale (outputs without an element bound: softmax and layer norm families,
	// elementwise ops).
	Ref *check.Result `json:"ref,omitempty"`
	// NaNMissing counts elements where the reference is NaN and the op is not; InfWrong those where
	// the reference is infinite or overflows float32 and the op is not its infinity (or NaN where
	// allowed); NonFinite those where the op is NaN or Inf and the reference is finite in float32
	// (and, under an element bound, no partial sum can overflow).
	NaNMissing int `json:"nan_missing"`
	InfWrong   int `json:"inf_wrong"`
	NonFinite  int `json:"non_finite"`
	// Overflowed counts elements whose terms' absolute sum passes float32's largest where the op
	// gave ±Inf or NaN, accepted (an element bound's overflow rule).
	Overflowed int `json:"overflowed,omitempty"`
	FirstWrong int `json:"first_wrong"` // index of the first non-finite mismatch, -1 if none
	// Torch is PyTorch's own output judged by the same rules: "pass", "differs: " and what, or
	// "unavailable". It never fails the op.
	Torch string `json:"torch"`
	OK    bool   `json:"ok"`
	Why   string `json:"why,omitempty"`
}

// Judge compares one output got with its float64 reference want and, when torch is not nil,
// PyTorch's output on the same input, under tol (the lesson's derived tolerance); cols is the
// length of a row (the innermost dimension), the unit of the relative scale.
func Judge(name string, got []float32, want []float64, torch []float32, tol check.Tolerance, cols int) Judged {
	return JudgeOutput(Output{Name: name, Got: got, Want: want, Tol: tol, Cols: cols}, torch)
}

// JudgeOutput judges out.Got against out.Want by the harness's rules (the package doc), and
// PyTorch's output torch (nil: unavailable) by the same rules beside it, without failing the op.
//
// The reference is the float64 evaluation of the op's formula, PyTorch's, so that its non-finite
// values are PyTorch's semantics (a NaN in gives NaN, inf - inf and 0 x inf give NaN, a softmax row
// all -inf is NaN). Where it is NaN the op must be NaN; where it is ±Inf, that infinity; where it
// is finite but overflows float32, a non-finite value (any infinity where the terms overflow). Elsewhere an output with an
// element bound (out.Bound and out.Mag) must be within each element's bound (non-finite accepted
// only where the element's terms' absolute sum passes float32's largest), and one without must be
// finite and within the lesson's tolerance, row by row in the row's own scale.
func JudgeOutput(out Output, torch []float32) Judged {
	j := judgeValues(out, out.Got)
	j.Torch = Unavailable
	if torch != nil {
		t := judgeValues(out, torch)
		j.Torch = "pass"
		if !t.OK {
			j.Torch = "differs: " + t.Why
		}
	}
	return j
}

// judgeValues is the judgement of got (the op's or PyTorch's values) against out's reference.
func judgeValues(out Output, got []float32) Judged {
	name, want, tol, cols := out.Name, out.Want, out.Tol, out.Cols
	j := Judged{Output: name, N: len(want), FirstWrong: -1}
	if len(got) != len(want) || (out.Bound != nil && (len(out.Bound) != len(want) || len(out.Mag) != len(want))) {
		j.Why = fmt.Sprintf("%s has %d values, the reference %d (bounds %d)", name, len(got), len(want), len(out.Bound))
		return j
	}
	if out.Bound != nil {
		b := check.CompareBounds(got, want, out.Mag, out.Bound)
		j.Rule, j.Bound = "element bound", &b
		j.NaNMissing, j.InfWrong, j.NonFinite, j.Overflowed = b.NaNMissing, b.InfWrong, b.NonFinite, b.Overflowed
		if !b.OK {
			j.FirstWrong = b.FirstBad
			j.Why = b.Err().Error()
		}
		j.OK = b.OK
		return j
	}
	if cols <= 0 {
		cols = max(len(want), 1)
	}
	j.Rule = tol.Name
	wrong := func(i int, count *int) {
		*count++
		if j.FirstWrong < 0 {
			j.FirstWrong = i
		}
	}
	var ref rowSet // finite elements, divided by their row's scale
	for row := 0; row*cols < len(want); row++ {
		lo, hi := row*cols, min((row+1)*cols, len(want))
		s := rowScale(want[lo:hi])
		floor := tol.Floor
		if out.RowFloor != nil && tol.Floor > 0 {
			if f := out.RowFloor(row); isFinite(f) {
				floor = f
			}
		}
		ref.start(s, floor)
		for i := lo; i < hi; i++ {
			// The non-finite rules are the element bound's with no bound on the finite elements
			// (judged below by the tolerance) and no overflow rule (no terms' sum to overflow).
			switch check.JudgeElement(got[i], want[i], 0, math.Inf(1)) {
			case check.ElemNaNMissing:
				wrong(i, &j.NaNMissing)
			case check.ElemInfWrong:
				wrong(i, &j.InfWrong)
			case check.ElemNonFinite:
				wrong(i, &j.NonFinite)
			default:
				if w32 := float64(float32(want[i])); isFinite(w32) {
					ref.add(float64(got[i]), w32)
				}
			}
		}
	}
	r := ref.compare(tol)
	j.Ref = &r
	var why []string
	if j.NaNMissing > 0 {
		why = append(why, fmt.Sprintf("%d elements not NaN where the reference is NaN", j.NaNMissing))
	}
	if j.InfWrong > 0 {
		why = append(why, fmt.Sprintf("%d elements not the infinity of the reference's sign (or NaN) where the exact value is infinite or overflows float32", j.InfWrong))
	}
	if j.NonFinite > 0 {
		why = append(why, fmt.Sprintf("%d elements NaN or Inf where the exact value is finite in float32", j.NonFinite))
	}
	if j.FirstWrong >= 0 {
		why[len(why)-1] += fmt.Sprintf(", first at %d", j.FirstWrong)
	}
	if !r.OK {
		why = append(why, "against float64: "+r.Err().Error())
	}
	j.OK = len(why) == 0
	j.Why = strings.Join(why, "; ")
	return j
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// rowScale is the RMS of the finite float32-rounded values of a reference row, or 1 when it has
// none or they are all zero (then the tolerance's absolute terms apply as they are).
func rowScale(row []float64) float64 {
	var s float64
	n := 0
	for _, v := range row {
		v = float64(float32(v))
		if isFinite(v) {
			s += v * v
			n++
		}
	}
	if n == 0 || s == 0 {
		return 1
	}
	rms := math.Sqrt(s / float64(n))
	if rms == 0 || math.IsInf(rms, 0) {
		return 1
	}
	return rms
}

// rowSet gathers finite (got, want) pairs row by row, each divided by its row's scale.
type rowSet struct {
	got, want    [][]float64
	scale, floor []float64
}

// start begins a row whose reference has scale s and whose elements' floor (an absolute error) is floor.
func (r *rowSet) start(s, floor float64) {
	r.got, r.want, r.scale, r.floor = append(r.got, nil), append(r.want, nil), append(r.scale, s), append(r.floor, floor)
}

func (r *rowSet) add(got, want float64) {
	k := len(r.scale) - 1
	r.got[k] = append(r.got[k], got/r.scale[k])
	r.want[k] = append(r.want[k], want/r.scale[k])
}

// compare is check.Compare over every row at once, in relative terms: each row's elements against
// tol with the row's floor (an absolute error derived for the output's own magnitudes) divided by
// the row's scale, and the L2 rule over all rows, ||got-want|| <= RelL2 ||want|| + 3 sqrt(sum of each
// element's floor squared), check's rule where every floor is equal.
func (r *rowSet) compare(tol check.Tolerance) check.Result {
	res := check.Result{FirstBad: -1, Tol: tol}
	var num, den, floors float64
	off := 0
	for k := range r.got {
		t := tol
		if tol.Floor > 0 {
			// WithFloor raised Abs to 10 floors, an absolute bound; in relative terms the bound is
			// the base tolerance's Abs (every floored tolerance of the catalogue is check.FP32's)
			// or 10 floors divided by the row's scale, whichever is larger.
			t.Floor = r.floor[k] / r.scale[k]
			t.Abs = math.Max(math.Min(tol.Abs, check.FP32.Abs), 10*t.Floor)
		}
		row := check.Compare(r.got[k], r.want[k], t)
		res.N += row.N
		res.Bad += row.Bad
		res.NonFinite += row.NonFinite
		res.MaxAbs = math.Max(res.MaxAbs, row.MaxAbs)
		if res.FirstBad < 0 && row.FirstBad >= 0 {
			res.FirstBad = off + row.FirstBad
		}
		for i, w := range r.want[k] {
			d := r.got[k][i] - w
			num += d * d
			den += w * w
		}
		if len(r.got[k]) > 0 {
			floors += t.Floor * t.Floor * float64(len(r.got[k]))
		}
		off += len(r.got[k])
	}
	switch {
	case den > 0:
		res.RelL2 = math.Sqrt(num / den)
	case num > 0:
		res.RelL2 = math.Inf(1)
	}
	if res.N > 0 {
		res.RMS = math.Sqrt(num / float64(res.N))
	}
	normOK := res.RelL2 <= tol.RelL2
	if tol.Floor > 0 {
		normOK = math.Sqrt(num) <= tol.RelL2*math.Sqrt(den)+3*math.Sqrt(floors)
	}
	res.OK = res.NonFinite == 0 && res.Bad == 0 && normOK
	return res
}

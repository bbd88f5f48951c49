package hostile

import (
	"fmt"
	"math"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/check"
)

// The verdicts of a case.
const (
	Pass    = "pass"    // every output right, non-finite values as PyTorch's
	Refused = "refused" // the op returned an error naming the reason, and no output
	Fail    = "fail"    // an output differs: Why says what and where
)

// Unavailable is the PyTorch column where python3 has no torch with CUDA.
const Unavailable = "unavailable"

// Judged is the judgement of one output of a case.
type Judged struct {
	Output string `json:"output"`
	N      int    `json:"n"`
	// Ref is the comparison with the float64 reference over the elements where it is finite in
	// float32, each row (the innermost dimension) divided by the RMS of its reference, so that a
	// tolerance holds the same at every scale.
	Ref check.Result `json:"ref"`
	// NaNMissing counts elements where the reference or PyTorch is NaN and the op is not;
	// NonFiniteWrong those where the op is non-finite (or infinite of the other sign) although the
	// reference says otherwise.
	NaNMissing     int `json:"nan_missing"`
	NonFiniteWrong int `json:"non_finite_wrong"`
	// TorchOverflowShared and TorchOverflowBeaten count elements whose exact value is finite in
	// float32 where PyTorch's is not (its float32 arithmetic overflowed on the way): the op was not
	// finite either, or gave the exact value.
	TorchOverflowShared int `json:"torch_overflow_shared,omitempty"`
	TorchOverflowBeaten int `json:"torch_overflow_beaten,omitempty"`
	FirstWrong          int `json:"first_wrong"` // index of the first non-finite mismatch, -1 if none
	// Torch is "unavailable", or the op against PyTorch's output (within twice the tolerance: both
	// are within it of the exact value) and PyTorch's own error against the reference.
	Torch      string  `json:"torch"`
	TorchRelL2 float64 `json:"torch_rel_l2"` // op against PyTorch, relative terms (-1: unavailable)
	TorchOwn   float64 `json:"torch_own_rel_l2"`
	OK         bool    `json:"ok"`
	Why        string  `json:"why,omitempty"`
}

// Judge compares one output got with its float64 reference want and, when torch is not nil,
// PyTorch's output on the same input, under tol (the lesson's derived tolerance); cols is the
// length of a row (the innermost dimension), the unit of the relative scale.
//
// Non-finite values follow PyTorch: where the reference (computed in float64 by PyTorch's formula,
// whose NaNs are IEEE's: a NaN input, inf - inf, a softmax row all -inf) is NaN, the op must be
// NaN; where the exact value overflows float32, the op must be infinite of its sign or NaN (an
// overflow inside a sum of both signs), and NaN where PyTorch gives NaN. Where PyTorch is not
// finite although the exact value is finite in float32 (its arithmetic overflowed on the way: a
// product past 3.4e38, inf - inf), the op may be non-finite as PyTorch is or give the right value
// (both are counted); without PyTorch such an element must be right. Elsewhere the op must be
// finite and within tol of the reference rounded to float32.
func Judge(name string, got []float32, want []float64, torch []float32, tol check.Tolerance, cols int) Judged {
	return JudgeOutput(Output{Name: name, Got: got, Want: want, Tol: tol, Cols: cols}, torch)
}

// JudgeOutput is Judge on an output, with its rows' own floors where it has them (RowFloor).
func JudgeOutput(out Output, torch []float32) Judged {
	name, got, want, tol, cols := out.Name, out.Got, out.Want, out.Tol, out.Cols
	j := Judged{Output: name, N: len(want), FirstWrong: -1, TorchRelL2: -1, TorchOwn: -1, Torch: Unavailable}
	if len(got) != len(want) || (torch != nil && len(torch) != len(want)) {
		j.Why = fmt.Sprintf("%s has %d values, the reference %d (PyTorch %d)", name, len(got), len(want), len(torch))
		return j
	}
	if cols <= 0 {
		cols = max(len(want), 1)
	}
	wrong := func(i int, count *int) {
		*count++
		if j.FirstWrong < 0 {
			j.FirstWrong = i
		}
	}
	var ref, vsTorch, torchOwn rowSet // finite elements, divided by their row's scale
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
		vsTorch.start(s, 2*floor)
		torchOwn.start(s, floor)
		for i := lo; i < hi; i++ {
			gi, wi := float64(got[i]), want[i]
			w32 := float64(float32(wi)) // the reference as float32 holds it: overflow is Inf, underflow 0
			torchNaN := torch != nil && math.IsNaN(float64(torch[i]))
			torchOver := torch != nil && !isFinite(float64(torch[i])) // NaN or Inf
			switch {
			case math.IsNaN(wi) || (torchNaN && math.IsInf(w32, 0)):
				if !math.IsNaN(gi) {
					wrong(i, &j.NaNMissing)
				}
			case torchOver && !isFinite(gi) && !math.IsInf(w32, 0):
				// PyTorch is not finite where the exact value is: its float32 arithmetic overflowed
				// on the way (a product past 3.4e38, inf - inf); the op did the same.
				j.TorchOverflowShared++
			case math.IsInf(w32, 0):
				if !(math.IsNaN(gi) || math.IsInf(gi, int(math.Copysign(1, w32)))) {
					wrong(i, &j.NonFiniteWrong)
				}
			case math.IsNaN(gi) || math.IsInf(gi, 0):
				wrong(i, &j.NonFiniteWrong)
			default:
				if torchOver {
					j.TorchOverflowBeaten++
				}
				ref.add(gi, w32)
				if torch != nil {
					if ti := float64(torch[i]); isFinite(ti) {
						torchOwn.add(ti, w32)
						vsTorch.add(gi, ti)
					}
				}
			}
		}
	}
	j.Ref = ref.compare(tol)
	var why []string
	if j.NaNMissing > 0 {
		why = append(why, fmt.Sprintf("%d elements not NaN where the reference or PyTorch is NaN", j.NaNMissing))
	}
	if j.NonFiniteWrong > 0 {
		why = append(why, fmt.Sprintf("%d elements non-finite (or infinite of the wrong sign) where the reference is not", j.NonFiniteWrong))
	}
	if j.FirstWrong >= 0 {
		why[len(why)-1] += fmt.Sprintf(", first at %d", j.FirstWrong)
	}
	if !j.Ref.OK {
		why = append(why, "against float64: "+j.Ref.Err().Error())
	}
	if torch != nil {
		own, vs := torchOwn.compare(tol), vsTorch.compare(twice(tol))
		j.TorchOwn, j.TorchRelL2 = own.RelL2, vs.RelL2
		j.Torch = fmt.Sprintf("op vs PyTorch rel L2 %.2g (%s within 2x tolerance); PyTorch vs float64 rel L2 %.2g (%s within tolerance)", vs.RelL2, okWord(vs.OK), own.RelL2, okWord(own.OK))
	}
	j.OK = len(why) == 0
	j.Why = strings.Join(why, "; ")
	return j
}

func okWord(ok bool) string {
	if ok {
		return "is"
	}
	return "NOT"
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

// twice is tol doubled: the bound between two results that are each within tol of the exact value.
func twice(tol check.Tolerance) check.Tolerance {
	tol.RelL2, tol.Rel, tol.Abs, tol.Floor = 2*tol.RelL2, 2*tol.Rel, 2*tol.Abs, 2*tol.Floor
	tol.Name = "2 x " + tol.Name
	return tol
}

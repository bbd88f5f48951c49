package record

import "math"

// JSON has no NaN or Inf, and a kernel that fails its check can leave one in a record: the
// article's sum of squares turns a variance negative and its layer norm NaN (lesson 04's
// stability case), and that record must be saved with its verdict like any other. Run.Save
// writes a non-finite error (RelL2, MaxAbs) as the largest float64, an error too large to
// measure (the record stays a failure: Correct is false), and a non-finite time or rate, which
// only a broken measurement makes, as 0 (not measured).

// Finite is r with every non-finite number replaced as Run.Save writes it.
func (r Record) Finite() Record {
	for _, f := range []*float64{&r.RelL2, &r.MaxAbs} {
		if math.IsNaN(*f) || math.IsInf(*f, 0) {
			*f = math.MaxFloat64
		}
	}
	for _, f := range []*float64{&r.MedianMS, &r.MinMS, &r.MaxMS, &r.GBps, &r.PctBW, &r.GFLOPs, &r.PctFLOPs} {
		if math.IsNaN(*f) || math.IsInf(*f, 0) {
			*f = 0
		}
	}
	return r
}

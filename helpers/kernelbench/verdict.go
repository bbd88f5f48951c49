package kernelbench

import (
	"math"
)

// KernelBench's correctness rule and score.
const (
	// Trials is how many trials of fresh random inputs a problem must pass (num_correct_trials in
	// KernelBench's evaluation scripts).
	Trials = 5
	// Tol is atol = rtol of KernelBench v0 and v0.1 (eval.py's comment), the rule the article examined.
	Tol = 1e-2
	// TolFP32Now is eval.py's float32 tolerance at SourceCommit (get_tolerance_for_precision),
	// reported beside the 1e-2 verdict.
	TolFP32Now = 1e-4
)

// FastPs are the p of the fast_p table: 1, 1.5 and 2.
func FastPs() []float64 { return []float64{1, 1.5, 2} }

// AllClose is torch.allclose(ref, ours, rtol=tol, atol=tol) as KernelBench calls it, with the
// reference model's output first: every |ref - ours| <= atol + rtol * |ours| (torch scales rtol by
// its second argument, the new model's output), no NaN on either side (equal_nan is off), and equal
// infinities close. Different lengths are never close.
func AllClose(ref, ours []float32, atol, rtol float64) bool {
	if len(ref) != len(ours) {
		return false
	}
	for i, r := range ref {
		a, b := float64(r), float64(ours[i])
		switch {
		case math.IsNaN(a) || math.IsNaN(b):
			return false
		case math.IsInf(a, 0) || math.IsInf(b, 0):
			if a != b {
				return false
			}
		case math.Abs(a-b) > atol+rtol*math.Abs(b):
			return false
		}
	}
	return true
}

// MaxAbsDiff is the largest |a - b| over the elements (NaN where either has a NaN).
func MaxAbsDiff(a, b []float32) float64 {
	m := 0.0
	for i := range min(len(a), len(b)) {
		d := math.Abs(float64(a[i]) - float64(b[i]))
		if math.IsNaN(d) {
			return math.NaN()
		}
		m = math.Max(m, d)
	}
	return m
}

// Outcome is one problem as fast_p sees it: correct by some rule, and the baseline's time over
// ours (0 or NaN when either was not measured).
type Outcome struct {
	Correct bool
	Speedup float64
}

// FastP is KernelBench's fast_p (score.py): the problems that are correct and strictly more than p
// times faster than the baseline, over all problems, those that could not run included. NaN when
// no problem has a speedup (the baseline was measured nowhere): then there is nothing to score.
func FastP(outcomes []Outcome, p float64) float64 {
	if len(outcomes) == 0 {
		return math.NaN()
	}
	measured, fast := false, 0
	for _, o := range outcomes {
		if o.Speedup > 0 && !math.IsNaN(o.Speedup) {
			measured = true
			if o.Correct && o.Speedup > p {
				fast++
			}
		}
	}
	if !measured {
		return math.NaN()
	}
	return float64(fast) / float64(len(outcomes))
}

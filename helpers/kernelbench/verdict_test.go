package kernelbench

import (
	"math"
	"testing"
)

// AllClose follows torch.allclose(ref, ours): rtol scales the second argument, NaN is never close,
// equal infinities are.
func TestAllClose(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	cases := []struct {
		ref, ours []float32
		want      bool
	}{
		{[]float32{1, 2}, []float32{1, 2}, true},
		{[]float32{1}, []float32{1.019}, true},   // 0.019 <= 0.01 + 0.01 * 1.019
		{[]float32{1}, []float32{1.0205}, false}, // 0.0205 > 0.01 + 0.010205
		// rtol scales |ours|: ref 100, ours 101.015 passes (1.015 <= 0.01 + 1.01015); ref 101.015,
		// ours 100 does not (1.015 > 0.01 + 1.0).
		{[]float32{100}, []float32{101.015}, true},
		{[]float32{101.015}, []float32{100}, false},
		{[]float32{nan}, []float32{nan}, false},
		{[]float32{1}, []float32{nan}, false},
		{[]float32{inf}, []float32{inf}, true},
		{[]float32{inf}, []float32{-inf}, false},
		{[]float32{1, 2}, []float32{1}, false},
	}
	for _, c := range cases {
		if got := AllClose(c.ref, c.ours, Tol, Tol); got != c.want {
			t.Errorf("AllClose(%v, %v) = %v, want %v", c.ref, c.ours, got, c.want)
		}
	}
}

// The rule's hole on problem 23: a softmax row of 393216 has outputs near 2.5e-6, so an output of
// zeros is allclose at 1e-2 (and still at 1e-4).
func TestAllCloseAcceptsZerosForLongSoftmaxRows(t *testing.T) {
	n := 393216
	ref := make([]float32, n)
	for i := range ref {
		ref[i] = float32(1 / float64(n) * (0.5 + float64(i%7)/7))
	}
	zeros := make([]float32, n)
	if !AllClose(ref, zeros, Tol, Tol) || !AllClose(ref, zeros, TolFP32Now, TolFP32Now) {
		t.Error("zeros should pass allclose on a long softmax row: that is the rule's known hole")
	}
	if d := MaxAbsDiff(ref, zeros); d > 4e-6 || d <= 0 {
		t.Errorf("max |ref - 0| = %g", d)
	}
}

// fast_p counts problems both correct and strictly faster than p, over all problems; NaN when no
// baseline was measured anywhere.
func TestFastP(t *testing.T) {
	os := []Outcome{{true, 2.5}, {true, 1.0}, {false, 3}, {true, 1.5}, {}} // the last did not run
	for _, c := range []struct{ p, want float64 }{{0, 3.0 / 5}, {1, 2.0 / 5}, {1.5, 1.0 / 5}, {2, 1.0 / 5}, {2.5, 0}} {
		if got := FastP(os, c.p); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("fast_%g = %g, want %g", c.p, got, c.want)
		}
	}
	if !math.IsNaN(FastP([]Outcome{{Correct: true}, {}}, 1)) {
		t.Error("fast_p without any baseline should be NaN (n/a)")
	}
	if !math.IsNaN(FastP(nil, 1)) {
		t.Error("fast_p of no problem should be NaN")
	}
}

package check

import (
	"math"
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	want := []float64{1, 2, 3, 4}
	cases := []struct {
		name string
		got  []float64
		ok   bool
	}{
		{"exact", []float64{1, 2, 3, 4}, true},
		{"within fp32", []float64{1 + 1e-7, 2, 3 - 2e-7, 4}, true},
		{"one wrong element", []float64{1, 2, 3.01, 4}, false},
		{"unwritten element", []float64{1, math.NaN(), 3, 4}, false},
		{"zeros", []float64{0, 0, 0, 0}, false},
		{"short", []float64{1, 2, 3}, false},
	}
	for _, c := range cases {
		r := Compare(c.got, want, FP32)
		if r.OK != c.ok {
			t.Errorf("%s: OK = %v, want %v (%v)", c.name, r.OK, c.ok, r)
		}
		if (r.Err() == nil) != c.ok {
			t.Errorf("%s: Err() = %v", c.name, r.Err())
		}
	}
	if r := Compare([]float64{1, math.NaN()}, []float64{1, 2}, FP32); r.NonFinite != 1 || r.FirstBad != 1 {
		t.Errorf("NaN not counted: %+v", r)
	}
}

func TestTinyValuesNeedRelativeError(t *testing.T) {
	// An all-zero output for tiny values passes a loose absolute tolerance; the L2 bound catches it.
	want := make([]float64, 1000)
	for i := range want {
		want[i] = 1e-6
	}
	if r := Compare(make([]float64, 1000), want, Tolerance{Name: "loose", RelL2: 1e-3, Rel: 1e-2, Abs: 1e-2}); r.OK {
		t.Errorf("zeros passed: %v", r)
	}
}

// A zero reference: without a floor any error is an infinite relative L2 error (layer norm's backward
// at M = 1 was failed that way); with a floor derived from the computation, rounding-sized errors
// pass and errors above the floor, or NaN, still fail.
func TestFloorJudgesZeroReferences(t *testing.T) {
	want := make([]float64, 8)
	got := []float64{1.2e-6, -3e-7, 0, 5e-7, 0, 0, -1e-6, 2e-7}
	if r := Compare(got, want, FP32); r.OK || !math.IsInf(r.RelL2, 1) {
		t.Fatalf("no floor: %v", r)
	}
	sigma := SumFloor(U32, 3, 316) // three terms of size rstd = 1/sqrt(1e-5)
	tol := FP32.WithFloor(sigma, "three terms of size 316")
	if r := Compare(got, want, tol); !r.OK {
		t.Errorf("rounding-sized errors on a zero reference failed the floor %.2g: %v", sigma, r.Err())
	}
	if !strings.Contains(tol.Name, "floor") || !strings.Contains(tol.Why, "three terms of size 316") {
		t.Errorf("the tolerance does not say how it judges zero references: %q / %q", tol.Name, tol.Why)
	}
	if r := Compare([]float64{0, 0, 0, 11 * sigma, 0, 0, 0, 0}, want, tol); r.OK {
		t.Errorf("an element 11 sigma off passed: %v", r)
	}
	if r := Compare([]float64{0, 0, math.NaN(), 0, 0, 0, 0, 0}, want, tol); r.OK {
		t.Errorf("a NaN passed: %v", r)
	}
	// Every element 5 sigma off: inside the element rule, over the RMS rule (3 sigma).
	five := make([]float64, 8)
	for i := range five {
		five[i] = 5 * sigma
	}
	if r := Compare(five, want, tol); r.OK || r.Err() == nil || !strings.Contains(r.Err().Error(), "RMS") {
		t.Errorf("an RMS error of 5 sigma passed: %v %v", r, r.Err())
	}
}

// A floor never lets an all-zero output pass where the reference is above it: the sums of n terms
// the floors are made for have an RMS of about sqrt(n) term (random signs), n / sqrt(6) u term is
// far below that up to n ~ 1e13 in float32.
func TestFloorStillFailsZeros(t *testing.T) {
	for _, n := range []int{1, 3, 1000, 8 * 1048561} {
		term := 0.3
		sigma := SumFloor(U32, n, term)
		tol := FP32.WithFloor(sigma, "test")
		want := make([]float64, 1000)
		for i := range want {
			want[i] = math.Sqrt(float64(n)) * term * math.Cos(float64(i)) // RMS ~ sqrt(n/2) term
		}
		if r := Compare(make([]float64, len(want)), want, tol); r.OK {
			t.Errorf("n = %d: zeros passed the floor %.2g: %v", n, sigma, r)
		}
		// and a result off by a skipped term (one of n) on every element fails too, where the
		// floor is below one term (n up to 10^7 here).
		skip := make([]float64, len(want))
		for i, w := range want {
			skip[i] = w - term
		}
		if r := Compare(skip, want, tol); r.OK {
			t.Errorf("n = %d: a missing term of %.1f on every element passed the floor %.2g: %v", n, term, sigma, r)
		}
	}
}

func TestSumFloor(t *testing.T) {
	// Lesson 03's model: u K / sqrt(54) for terms of RMS 1/3.
	if got, want := SumFloor(U32, 4096, 1.0/3), U32*4096/math.Sqrt(54); math.Abs(got-want) > 1e-12*want {
		t.Errorf("SumFloor = %g, want %g", got, want)
	}
	if FP32.WithFloor(0, "none") != FP32 {
		t.Error("a zero floor changed the tolerance")
	}
}

package check

import (
	"math"
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

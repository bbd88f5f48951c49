package half

import (
	"math"
	"testing"
)

func TestBF16Rounding(t *testing.T) {
	cases := []struct {
		in   float32
		want float32
	}{
		{1, 1}, {-2.5, -2.5}, {0, 0},
		{1 + 1.0/256, 1},                      // a tie: rounds to the even mantissa (1.0)
		{1 + 3.0/256, 1 + 4.0/256},            // a tie: rounds up to the even mantissa
		{1 + 1.0/256 + 1.0/4096, 1 + 2.0/256}, // above the tie: up
		{float32(math.Inf(1)), float32(math.Inf(1))},
		{math.MaxFloat32, float32(math.Inf(1))}, // past the largest bfloat16 plus half its ulp: infinity
	}
	for _, c := range cases {
		if got := BF16FromFloat32(c.in).Float32(); got != c.want {
			t.Errorf("bfloat16(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if v := BF16FromFloat32(float32(math.NaN())).Float32(); v == v {
		t.Error("NaN did not stay NaN")
	}
	for _, x := range []float32{0.1, 1000.7, -3e-20, 7e30} {
		r := BF16FromFloat32(x).Float32()
		if rel := math.Abs(float64(r-x)) / math.Abs(float64(x)); rel > 1.0/256 {
			t.Errorf("bfloat16(%v) = %v: relative error %.2g over half an ulp (2^-8)", x, r, rel)
		}
	}
}

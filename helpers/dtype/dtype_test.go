package dtype

import (
	"math"
	"testing"
)

func TestRoundTrips(t *testing.T) {
	if F32.Size() != 4 || F16.Size() != 2 || BF16.Size() != 2 {
		t.Fatal("sizes")
	}
	// 1 + 2^-11 is a tie for float16 (rounds to even: 1) and far below bfloat16's step.
	x := float32(1 + math.Ldexp(1, -11))
	if F16.Round(x) != 1 || BF16.Round(x) != 1 || F32.Round(x) != x {
		t.Errorf("Round(%v): f16 %v bf16 %v f32 %v", x, F16.Round(x), BF16.Round(x), F32.Round(x))
	}
	vals := []float32{0, -2.5, 65504, 1.0 / 3}
	for _, d := range []DType{F16, BF16} {
		w := d.Widen16(d.Round16(vals))
		for i, v := range vals {
			if float32(w[i]) != d.Round(v) {
				t.Errorf("%s: %v -> %v, want %v", d, v, w[i], d.Round(v))
			}
		}
	}
	if F16.Bits16(1) != 0x3C00 || BF16.Bits16(1) != 0x3F80 || F16.Value16(0x3C00) != 1 || BF16.Value16(0x3F80) != 1 {
		t.Error("the bits of 1")
	}
}

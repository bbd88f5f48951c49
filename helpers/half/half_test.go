package half

import (
	"math"
	"testing"
)

func TestKnownValues(t *testing.T) {
	cases := []struct {
		f float32
		h Half
	}{
		{0, 0}, {1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65536, 0x7c00},
		{float32(math.Inf(-1)), 0xfc00}, {5.960464477539063e-08, 0x0001}, {0.333251953125, 0x3555},
		{1.0009765625, 0x3c01}, {1.00048828125, 0x3c00}, // a tie rounds to even
		{1.00146484375, 0x3c02}, // a tie rounds to even (up)
	}
	for _, c := range cases {
		if got := FromFloat32(c.f); got != c.h {
			t.Errorf("FromFloat32(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	if h := FromFloat32(float32(math.NaN())); h.Float32() == h.Float32() {
		t.Error("NaN did not stay NaN")
	}
}

func TestRoundTripEveryHalf(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := Half(i)
		f := h.Float32()
		if f != f {
			continue
		}
		if back := FromFloat32(f); back != h && !(f == 0 && back&0x7fff == 0) {
			t.Fatalf("%#04x -> %g -> %#04x", i, f, back)
		}
	}
}

func TestRoundingIsNearest(t *testing.T) {
	// Compare with rounding through float64 arithmetic on a grid of values.
	for x := float32(1e-6); x < 7e4; x *= 1.0007 {
		h := FromFloat32(x)
		err := math.Abs(float64(h.Float32()) - float64(x))
		up := math.Abs(float64((h + 1).Float32()) - float64(x))
		if h < 0x7bff && up < err {
			t.Fatalf("%g rounded to %g, %g is nearer", x, h.Float32(), (h + 1).Float32())
		}
	}
}

func TestBF16(t *testing.T) {
	cases := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80}, {-2, 0xc000}, {0, 0}, {float32(math.Inf(1)), 0x7f80},
		{1 + 1.0/256, 0x3f80},            // a tie: to even (down)
		{1 + 3.0/256, 0x3f82},            // a tie: to even (up)
		{1 + 1.0/256 + 1.0/4096, 0x3f81}, // just past the tie: up
		{math.MaxFloat32, 0x7f80},        // rounds past the largest bfloat16: infinity
	}
	for _, c := range cases {
		if got := BF16FromFloat32(c.in); uint16(got) != c.want {
			t.Errorf("BF16FromFloat32(%v) = %#04x, want %#04x", c.in, uint16(got), c.want)
		}
	}
	if h := BF16FromFloat32(float32(math.NaN())); !math.IsNaN(float64(h.Float32())) {
		t.Errorf("NaN became %v", h.Float32())
	}
	// Every bfloat16 round-trips exactly, and rounding is to the nearest.
	for b := 0; b < 1<<16; b++ {
		h := BF16(b)
		f := h.Float32()
		if math.IsNaN(float64(f)) {
			continue
		}
		if back := BF16FromFloat32(f); back != h {
			t.Fatalf("%#04x -> %v -> %#04x", b, f, uint16(back))
		}
	}
	for _, f := range []float32{0.1, -3.3, 1e-30, 12345.678} {
		got := float64(BF16FromFloat32(f).Float32())
		if math.Abs(got-float64(f)) > math.Abs(float64(f))/256 {
			t.Errorf("%v rounded to %v: more than half an ulp (2^-8 relative)", f, got)
		}
	}
	if v := BF16Float64s(BF16FromFloat32s([]float32{0.5, 3})); v[0] != 0.5 || v[1] != 3 {
		t.Errorf("slices: %v", v)
	}
}

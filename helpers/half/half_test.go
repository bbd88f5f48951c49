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

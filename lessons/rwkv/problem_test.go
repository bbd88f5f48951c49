package rwkv

import (
	"math"
	"testing"
)

// naiveForward is the definition written as directly as possible, to test the optimised reference.
func naiveForward(s Shape, w, k []float64, eps float64) []float64 {
	out := make([]float64, s.Len())
	for b := 0; b < s.B; b++ {
		for c := 0; c < s.C; c++ {
			for t := 0; t < s.T; t++ {
				sum := eps
				for u := 0; u <= t; u++ {
					sum += w[c*s.T+(s.T-1)-(t-u)] * k[(b*s.C+c)*s.T+u]
				}
				out[(b*s.C+c)*s.T+t] = sum
			}
		}
	}
	return out
}

func f64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

func TestForwardMatchesDefinition(t *testing.T) {
	for _, s := range []Shape{{1, 1, 1}, {2, 3, 5}, {3, 2, 17}, {1, 4, 64}} {
		w32, k32 := Inputs(s, 7)
		want := naiveForward(s, f64(w32), f64(k32), Eps)
		got := Forward(s, w32, k32, Eps)
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-12*math.Max(1, math.Abs(want[i])) {
				t.Fatalf("%v: out[%d] = %v, want %v", s, i, got[i], want[i])
			}
		}
		// Sampled rows agree with the full output.
		rows := SampleRows(s, 3, 1)
		part := ForwardRows(s, w32, k32, Eps, rows)
		full := Gather(got, s.T, rows)
		for i := range part {
			if part[i] != full[i] {
				t.Fatalf("%v: sampled row value %d differs: %v vs %v", s, i, part[i], full[i])
			}
		}
	}
}

// TestBackwardFiniteDifferences proves dk and dw: L = sum(g * out) is bilinear in (w, k), so a
// central difference is exact up to rounding, and every gradient element is checked on small shapes.
func TestBackwardFiniteDifferences(t *testing.T) {
	for _, s := range []Shape{{1, 1, 1}, {2, 3, 5}, {3, 2, 8}, {2, 1, 13}} {
		w32, k32 := Inputs(s, 11)
		w, k, g := f64(w32), f64(k32), f64(Upstream(s, 11))
		dk := BackwardDK(s, w, g)
		dw := BackwardDW(s, k, g)
		const h = 1e-3
		fd := func(x []float64, i int) float64 {
			old := x[i]
			x[i] = old + h
			lp := Loss(s, w, k, g, Eps)
			x[i] = old - h
			lm := Loss(s, w, k, g, Eps)
			x[i] = old
			return (lp - lm) / (2 * h)
		}
		for i := range k {
			if want := fd(k, i); math.Abs(dk[i]-want) > 1e-8*math.Max(1, math.Abs(want)) {
				t.Fatalf("%v: dk[%d] = %v, finite difference %v", s, i, dk[i], want)
			}
		}
		for i := range w {
			if want := fd(w, i); math.Abs(dw[i]-want) > 1e-8*math.Max(1, math.Abs(want)) {
				t.Fatalf("%v: dw[%d] = %v, finite difference %v", s, i, dw[i], want)
			}
		}
		// Subsets agree with the full gradients.
		rows, chans := SampleRows(s, 2, 3), SampleChannels(s, 1, 3)
		for i, v := range BackwardDKRows(s, w, g, rows) {
			if v != Gather(dk, s.T, rows)[i] {
				t.Fatalf("%v: dk on sampled rows differs at %d", s, i)
			}
		}
		for i, v := range BackwardDWChannels(s, k, g, chans) {
			if v != Gather(dw, s.T, chans)[i] {
				t.Fatalf("%v: dw on sampled channels differs at %d", s, i)
			}
		}
	}
}

func TestShapeValidate(t *testing.T) {
	if err := ArticleShape.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []Shape{{0, 1, 1}, {1, -1, 1}, {1, 1, 0}, {1 << 12, 1 << 12, 1 << 8}} {
		if s.Validate() == nil {
			t.Errorf("%v: want an error", s)
		}
	}
	if got := ArticleShape.ForwardFLOPs(); math.Abs(got-14.5e9) > 0.1e9 {
		t.Errorf("article forward FLOPs %.3g, want about 14.5e9", got)
	}
}

func TestInputsRange(t *testing.T) {
	w, k := Inputs(Shape{2, 3, 4}, 1)
	for _, v := range append(w, k...) {
		if v < 0 || v >= 1 {
			t.Fatalf("input %v outside [0, 1)", v)
		}
	}
	if len(w) != 12 || len(k) != 24 {
		t.Fatalf("lengths %d, %d", len(w), len(k))
	}
}

package rwkv

import (
	"math"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
)

// The forward reference equals the definition, and sampled rows equal the full output.
func TestForwardMatchesDefinition(t *testing.T) {
	for _, s := range []Shape{{1, 1, 1}, {2, 3, 5}, {3, 2, 17}, {1, 4, 64}} {
		w32, k32 := Inputs(s, 7)
		if err := ProveReferences(s, w32, k32, Upstream(s, 7)); err != nil {
			t.Fatal(err)
		}
		got := Forward(s, w32, k32, Eps)
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
		if err := ProveReferences(s, w32, k32, Upstream(s, 11)); err != nil {
			t.Fatal(err)
		}
		w, k, g := check.Float64s(w32), check.Float64s(k32), check.Float64s(Upstream(s, 11))
		dk, dw := BackwardDK(s, w, g), BackwardDW(s, k, g)
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

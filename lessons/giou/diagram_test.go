package giou

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/diagram"
)

// The notebook's GIoU diagram computes its areas with helpers/diagram: it must be this lesson's loss,
// clamp included, on well-formed boxes that overlap, miss or nest.
func TestDiagramDrawsTheLessonsGIoU(t *testing.T) {
	if diagram.GIoUEps != Eps {
		t.Fatalf("the diagram clamps at %g, the lesson at %g", diagram.GIoUEps, Eps)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	box := func() [4]float64 {
		x, y := 20*rng.Float64(), 20*rng.Float64()
		return [4]float64{x, y, x + 10*rng.Float64(), y + 10*rng.Float64()}
	}
	for trial := 0; trial < 1000; trial++ {
		p, q := box(), box()
		want, _ := GIoU(p, q)
		got := diagram.GIoU(diagram.Box{X1: p[0], Y1: p[1], X2: p[2], Y2: p[3]}, diagram.Box{X1: q[0], Y1: q[1], X2: q[2], Y2: q[3]}).GIoU
		if math.Abs(got-want) > 1e-12 {
			t.Fatalf("pred %v, target %v: the diagram's GIoU %v, the lesson's %v", p, q, got, want)
		}
	}
}

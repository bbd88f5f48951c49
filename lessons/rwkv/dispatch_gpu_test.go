//go:build !nocuda

package rwkv

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// anyShapes are shapes the general steps must take: a single element, T = 1 with odd B, odd T off
// every tile, T just under and over a chunk of 256, T over 1024 (every ladder backward refuses it)
// and T over v5's shared memory (every ladder forward refuses it).
var anyShapes = []Shape{{1, 1, 1}, {3, 2, 1}, {3, 5, 37}, {2, 3, 255}, {2, 3, 257}, {5, 3, 1100}, {2, 2, 3000}}

// The general forward and backward on fresh random inputs, NaN-poisoned outputs, every element
// against the float64 reference.
func TestGeneralStepsAnyShape(t *testing.T) {
	env := labtest.Open(t)
	for i, s := range anyShapes {
		p, err := NewProblem(env, s, uint64(900+i), 0)
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Check(GeneralStep, "")
		p.Free()
		if err != nil {
			t.Errorf("general forward on %v: %v", s, err)
		} else if !res.OK {
			t.Errorf("general forward on %v: %v", s, res.Err())
		}
		bp, err := NewBackwardProblem(env, s, uint64(950+i), 0)
		if err != nil {
			t.Fatal(err)
		}
		bres, err := bp.Check(GeneralBackward)
		bp.Free()
		if err != nil {
			t.Errorf("general backward on %v: %v", s, err)
		} else if !bres.OK() {
			t.Errorf("general backward on %v: %v\n%s", s, bres.Err(), bres)
		}
	}
}

// The dispatched op on shapes the fast steps refuse: the steps it chose are logged; dk and dw of the
// training loss against the float64 reference chain on every element, and a finite-difference
// gradcheck through the loss on the small shapes (and 40 elements of each input on T = 1100, 3000).
func TestOpAnyShape(t *testing.T) {
	env := labtest.Open(t)
	for i, s := range anyShapes {
		op, c, err := NewOp(env, s, FP32)
		if err != nil {
			t.Errorf("%v: %v", s, err)
			continue
		}
		op.Free()
		t.Logf("%s", c)
		if s.T > 1024 && c.Bwd.Name != GeneralBackward.Name {
			t.Errorf("%v: backward %s chosen, but every ladder backward refuses T > %d", s, c.Bwd.Name, TMax)
		}
		r, err := AutogradCheck(env, s, c.Fwd, c.Bwd, uint64(40+i), 0)
		if err != nil {
			t.Errorf("%v: %v", s, err)
			continue
		}
		if !r.OK() {
			t.Errorf("%v: %s", s, r)
		}
		per := 0
		if s.T > 1024 {
			per = 40
		}
		g, err := GradCheckGPU(env, s, c.Fwd, c.Bwd, uint64(60+i), per)
		if err != nil {
			t.Errorf("%v gradcheck: %v", s, err)
			continue
		}
		if !g.OK {
			t.Errorf("%v gradcheck (%s + %s): %v: %v", s, c.Fwd.Name, c.Bwd.Name, g, g.Err())
		}
	}
}

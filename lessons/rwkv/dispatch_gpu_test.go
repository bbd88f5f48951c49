//go:build !nocuda

package rwkv

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
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
		c, ok := choose(t, env, s, FP32)
		if !ok {
			continue
		}
		if s.T > 1024 && c.Bwd.Name != GeneralBackward.Name {
			t.Errorf("%v: backward %s chosen, but every ladder backward refuses T > %d", s, c.Bwd.Name, TMax)
		}
		per := 0
		if s.T > 1024 {
			per = 40
		}
		checkOp(t, env, s, c.Fwd, c.Bwd, uint64(40+i), per)
	}
}

// choose is the op's dispatch on s at precision prec, through NewOp (the op is built, then freed);
// false (after t.Error) when it fails.
func choose(t *testing.T, env *lab.Env, s Shape, prec Precision) (Choice, bool) {
	t.Helper()
	op, c, err := NewOp(env, s, prec)
	if err != nil {
		t.Errorf("%v: %v", s, err)
		return c, false
	}
	op.Free()
	t.Logf("%s", c)
	return c, true
}

// checkOp runs the training loss through the GPU op of fwd and bwd on s: dk and dw against the
// float64 reference chain on every element (seed), and a finite-difference gradcheck through the
// loss of at most per elements of each input (0: all; seed+20). It fails t on any error.
func checkOp(t *testing.T, env *lab.Env, s Shape, fwd Step, bwd BackwardStep, seed uint64, per int) {
	t.Helper()
	r, err := AutogradCheck(env, s, fwd, bwd, seed, 0)
	if err != nil {
		t.Errorf("%v: %v", s, err)
		return
	}
	if !r.OK() {
		t.Errorf("%v: %s", s, r)
	}
	g, err := GradCheckGPU(env, s, fwd, bwd, seed+20, per)
	if err != nil {
		t.Errorf("%v gradcheck: %v", s, err)
		return
	}
	if !g.OK {
		t.Errorf("%v gradcheck (%s + %s): %v: %v", s, fwd.Name, bwd.Name, g, g.Err())
	}
}

// The op on w and k that start one float into larger buffers (a reader's slice of a bigger tensor),
// through the vector steps (float4 rows), which the dispatch picks from the shape alone: the op
// hands them aligned copies, so dk and dw of the training loss still match the float64 reference on
// every element, where the steps would fault on the views themselves. First the FP32 dispatch's own
// choice, then each vector forward and backward pair on a shape all of them take.
func TestOpOnMisalignedViews(t *testing.T) {
	env := labtest.Open(t)
	s := Shape{B: 16, C: 3, T: 40}
	if c, ok := choose(t, env, s, FP32); ok {
		checkOpOnViews(t, env, s, c.Fwd, c.Bwd, 60)
	}
	for i, v := range []string{"v2", "v3", "v4"} {
		checkOpOnViews(t, env, Shape{B: 8, C: 1, T: 1024}, mustStep(v), mustBackward("bwd "+v), uint64(61+i))
	}
}

// checkOpOnViews runs the training loss through the op of fwd and bwd on s, on views of w and k one
// float into their buffers, and checks dk and dw on every element (fp32 tolerances).
func checkOpOnViews(t *testing.T, env *lab.Env, s Shape, fwd Step, bwd BackwardStep, seed uint64) {
	t.Helper()
	r, err := autogradCheck(env, s, fwd, bwd, seed, 0, 1)
	if err != nil {
		t.Errorf("%v (%s, %s) on misaligned views: %v", s, fwd.Name, bwd.Name, err)
		return
	}
	if !r.OK() {
		t.Errorf("%v (%s, %s) on misaligned views: %s", s, fwd.Name, bwd.Name, r)
	}
}

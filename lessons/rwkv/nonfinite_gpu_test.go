//go:build !nocuda

package rwkv

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/autograd"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// The op (the FP32 dispatch's steps: padded register tiles at T = 13 and 129, none at T = 256) on
// inputs with one +inf, -inf or NaN in w, in k or in the upstream gradient: forward and backward,
// every element of out, dk and dw against the float64 reference's non-finite pattern (NaN where it
// is NaN, the same infinity where it is infinite) and within the lesson's tolerances where it is
// finite. A padded zero multiplied by the value would put NaN where the exact result is finite.
func TestOpNonFiniteInputs(t *testing.T) {
	env := labtest.Open(t)
	for _, s := range nonFiniteShapes {
		op, c, err := NewOp(env, s, FP32)
		if err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		t.Logf("%s", c)
		for i, p := range pokes(s) {
			if err := checkNonFinite(env, op, p, uint64(70+i)); err != nil {
				t.Errorf("%v (%s / %s), %s: %v", s, op.Fwd.Name, op.Bwd.Step.Name, p, err)
			}
		}
		op.Free()
	}
}

// checkNonFinite runs op forward on w and k and backward on g (drawn with seed, p's value put in)
// and compares out, dk and dw with the float64 reference (compareNonFinite).
func checkNonFinite(env *lab.Env, op *GPUOp, p poke, seed uint64) error {
	s := op.Shape
	w32, k32, g32 := pokedInputs(s, seed, p)
	w := autograd.New("w", widen(w32), s.C, s.T)
	k := autograd.New("k", widen(k32), s.B, s.C, s.T)
	g := autograd.New("g", widen(g32), s.B, s.C, s.T)
	defer w.Free()
	defer k.Free()
	ctx := &autograd.Context{}
	out, err := op.Forward(ctx, w, k)
	if err != nil {
		return err
	}
	defer out.Free()
	grads, err := op.Backward(ctx, g)
	if err != nil {
		return err
	}
	for _, gr := range grads {
		defer gr.Free()
	}
	for _, r := range []struct {
		name string
		got  *autograd.Tensor
		want []float64
	}{
		{name: "out", got: out, want: Forward(s, w32, k32, Eps)},
		{name: "dk", got: grads[1], want: BackwardDK(s, w32, g32)},
		{name: "dw", got: grads[0], want: BackwardDW(s, k32, g32)},
	} {
		got, err := r.got.Values()
		if err != nil {
			return err
		}
		tol := op.Fwd.Tol
		switch r.name {
		case "dk":
			tol = DKTolerance
		case "dw":
			tol = DWTolerance
		}
		if err := compareNonFinite(r.name, got, r.want, tol); err != nil {
			return err
		}
	}
	return nil
}

package autograd

import (
	"math"
	"strings"
	"testing"
)

func TestTapeLossTanh(t *testing.T) {
	xs := []float64{0.5, -1, 2, 0}
	x := Param("x", append([]float64(nil), xs...))
	tp := NewTape()
	sq, err := tp.Apply(Mul, x, x)
	if err != nil {
		t.Fatal(err)
	}
	th, _ := tp.Apply(Tanh, x)
	d, _ := tp.Apply(Sub, sq, th)
	loss, _ := tp.Apply(Sum, d)
	if err := tp.Backward(loss); err != nil {
		t.Fatal(err)
	}
	g, _ := x.Grad.Values()
	for i, v := range xs {
		th := math.Tanh(v)
		want := 2*v - (1 - th*th)
		if math.Abs(g[i]-want) > 1e-15 {
			t.Errorf("grad[%d] = %v, want %v", i, g[i], want)
		}
	}
	if err := tp.Backward(loss); err == nil {
		t.Error("a second backward on the same tape was accepted")
	}
}

func TestConstantsGetNoGradient(t *testing.T) {
	a := Param("a", []float64{1, 2})
	c := New("c", []float64{3, 4})
	tp := NewTape()
	p, _ := tp.Apply(Mul, a, c)
	l, _ := tp.Apply(Sum, p)
	if err := tp.Backward(l); err != nil {
		t.Fatal(err)
	}
	if c.Grad != nil {
		t.Error("a constant got a gradient")
	}
	g, _ := a.Grad.Values()
	if g[0] != 3 || g[1] != 4 {
		t.Errorf("grad a = %v, want [3 4]", g)
	}
	// Nothing requires a gradient: nothing is recorded.
	tp2 := NewTape()
	if _, err := tp2.Apply(Sum, c); err != nil || tp2.Len() != 0 {
		t.Errorf("constant-only apply recorded %d nodes (err %v)", tp2.Len(), err)
	}
}

func TestGradCheckPasses(t *testing.T) {
	cases := map[string]struct {
		loss LossFunc
		in   []*Tensor
	}{
		"elementwise": {func(tp *Tape, in []*Tensor) (*Tensor, error) {
			p, err := tp.Apply(Mul, in[0], in[1])
			if err != nil {
				return nil, err
			}
			e, _ := tp.Apply(Exp, in[0])
			s, _ := tp.Apply(Add, p, e)
			th, _ := tp.Apply(Tanh, s)
			return Chain(tp, th, Square, Scale(0.5), Sum)
		}, []*Tensor{Param("a", []float64{0.3, -0.7, 1.1}), Param("b", []float64{2, 0.1, -0.4})}},
		"matmul": {func(tp *Tape, in []*Tensor) (*Tensor, error) {
			m, err := tp.Apply(MatMul, in[0], in[1])
			if err != nil {
				return nil, err
			}
			m2, err := tp.Apply(MatMul, m, in[0]) // (2,3)x(3,2) then (2,2)x(2,3): a used twice
			if err != nil {
				return nil, err
			}
			return Chain(tp, m2, Tanh, Sum)
		}, []*Tensor{Param("a", []float64{0.1, 0.2, -0.3, 0.4, 0.5, -0.6}, 2, 3), Param("b", []float64{1, -1, 0.5, 0.25, -0.5, 2}, 3, 2)}},
	}
	for name, c := range cases {
		res, err := GradCheck(c.loss, c.in, Float64Check)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !res.OK {
			t.Errorf("%s: %v: %v", name, res, res.Err())
		}
		if res.Checked != func() int {
			n := 0
			for _, x := range c.in {
				n += x.Len()
			}
			return n
		}() {
			t.Errorf("%s: checked %d elements", name, res.Checked)
		}
	}
}

// wrongTanh has the derivative 1 - tanh(x) instead of 1 - tanh(x)^2.
var wrongTanh Function = unary{"wrong tanh", math.Tanh, func(x float64) float64 { return 1 - math.Tanh(x) }}

func TestGradCheckCatchesWrongBackward(t *testing.T) {
	x := Param("x", []float64{0.5, -1, 2})
	res, err := GradCheck(func(tp *Tape, in []*Tensor) (*Tensor, error) {
		return Chain(tp, in[0], wrongTanh, Sum)
	}, []*Tensor{x}, Float64Check)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.Err() == nil {
		t.Fatalf("a wrong backward passed: %v", res)
	}
	if !strings.Contains(res.Err().Error(), "x[") {
		t.Errorf("error does not name the element: %v", res.Err())
	}
	// The same loss with the right derivative passes, and the sampled check stays in range.
	opts := Float64Check
	opts.MaxPerInput = 2
	res, err = GradCheck(func(tp *Tape, in []*Tensor) (*Tensor, error) {
		return Chain(tp, in[0], Tanh, Sum)
	}, []*Tensor{x}, opts)
	if err != nil || !res.OK || res.Checked != 2 {
		t.Errorf("right backward: %v (checked %d, err %v)", res, res.Checked, err)
	}
}

func TestShapeErrors(t *testing.T) {
	tp := NewTape()
	if _, err := tp.Apply(Add, Param("a", []float64{1, 2}), Param("b", []float64{1})); err == nil {
		t.Error("adding different shapes was accepted")
	}
	if _, err := tp.Apply(MatMul, Param("a", []float64{1, 2}, 1, 2), Param("b", []float64{1, 2}, 1, 2)); err == nil {
		t.Error("a matmul of (1,2)x(1,2) was accepted")
	}
	v := Param("v", []float64{1, 2})
	sq, _ := tp.Apply(Square, v)
	if err := tp.Backward(sq); err == nil {
		t.Error("backward from a non-scalar without a seed was accepted")
	}
}

package autograd_test

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/autograd"
)

// The loss of RWKV-CUDA's check, sum(x*x - tanh(x)), on a tape: x is used twice by Mul and once by
// Tanh, and the tape adds the three contributions.
func Example() {
	x := autograd.Param("x", []float64{0.5, -1, 2})
	tp := autograd.NewTape()
	sq, _ := tp.Apply(autograd.Mul, x, x)
	th, _ := tp.Apply(autograd.Tanh, x)
	d, _ := tp.Apply(autograd.Sub, sq, th)
	loss, _ := tp.Apply(autograd.Sum, d)
	if err := tp.Backward(loss); err != nil {
		fmt.Println(err)
		return
	}
	g, _ := x.Grad.Values() // 2x - (1 - tanh(x)^2)
	fmt.Printf("loss %.4f, grad %.4f\n", mustScalar(loss), g)

	res, err := autograd.GradCheck(func(tp *autograd.Tape, in []*autograd.Tensor) (*autograd.Tensor, error) {
		return autograd.Chain(tp, in[0], autograd.Square, autograd.Sum)
	}, []*autograd.Tensor{x}, autograd.Float64Check)
	fmt.Println(res.OK, res.Checked, err)
	// Output:
	// loss 4.5854, grad [0.2136 -2.4200 3.9293]
	// true 3 <nil>
}

func mustScalar(t *autograd.Tensor) float64 {
	v, _ := t.Values()
	return v[0]
}

// A Function of your own: implement Name, Forward (save what Backward needs) and Backward (one
// gradient per input), then prove it with GradCheck.
type cube struct{}

func (cube) Name() string { return "cube" }

func (cube) Forward(ctx *autograd.Context, in ...*autograd.Tensor) (*autograd.Tensor, error) {
	v, err := in[0].Values()
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x * x * x
	}
	ctx.SaveForBackward(in[0])
	return autograd.New("cube", out, in[0].Shape...), nil
}

func (cube) Backward(ctx *autograd.Context, g *autograd.Tensor) ([]*autograd.Tensor, error) {
	x, _ := ctx.Saved()[0].Values()
	gv, err := g.Values()
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(x))
	for i := range x {
		out[i] = gv[i] * 3 * x[i] * x[i]
	}
	return []*autograd.Tensor{autograd.New("dx", out, ctx.Saved()[0].Shape...)}, nil
}

func ExampleFunction() {
	x := autograd.Param("x", []float64{0.3, -1.2, 2})
	res, _ := autograd.GradCheck(func(tp *autograd.Tape, in []*autograd.Tensor) (*autograd.Tensor, error) {
		return autograd.Chain(tp, in[0], cube{}, autograd.Sum)
	}, []*autograd.Tensor{x}, autograd.Float64Check)
	fmt.Println(res.OK)
	// Output: true
}

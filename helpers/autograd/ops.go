package autograd

import (
	"fmt"
	"math"
)

// The host functions below are small and general: enough to build losses around a GPU op and to
// test the tape. Each takes and returns host values (GPU tensors are downloaded).

func hostValues(fn string, ts ...*Tensor) ([][]float64, error) {
	out := make([][]float64, len(ts))
	for i, t := range ts {
		v, err := t.Values()
		if err != nil {
			return nil, fmt.Errorf("%s: input %d: %w", fn, i, err)
		}
		out[i] = v
	}
	return out, nil
}

func sameLen(fn string, a, b *Tensor) error {
	if a.Len() != b.Len() || !sameShape(a.Shape, b.Shape) {
		return fmt.Errorf("%s: shapes %v and %v differ", fn, a.Shape, b.Shape)
	}
	return nil
}

// elementwise is a binary elementwise function f(a, b) with partial derivatives da and db.
type elementwise struct {
	name   string
	f      func(a, b float64) float64
	da, db func(a, b float64) float64
}

func (e elementwise) Name() string { return e.name }

func (e elementwise) Forward(ctx *Context, in ...*Tensor) (*Tensor, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("%s takes 2 inputs, got %d", e.name, len(in))
	}
	if err := sameLen(e.name, in[0], in[1]); err != nil {
		return nil, err
	}
	v, err := hostValues(e.name, in...)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(v[0]))
	for i := range out {
		out[i] = e.f(v[0][i], v[1][i])
	}
	ctx.SaveForBackward(in[0], in[1])
	return New(e.name, out, in[0].Shape...), nil
}

func (e elementwise) Backward(ctx *Context, g *Tensor) ([]*Tensor, error) {
	s := ctx.Saved()
	v, err := hostValues(e.name, s[0], s[1], g)
	if err != nil {
		return nil, err
	}
	grads := make([]*Tensor, 2)
	for j, d := range []func(a, b float64) float64{e.da, e.db} {
		if !ctx.NeedsGrad(j) {
			continue
		}
		out := make([]float64, len(v[0]))
		for i := range out {
			out[i] = v[2][i] * d(v[0][i], v[1][i])
		}
		grads[j] = New("d"+s[j].Name, out, s[j].Shape...)
	}
	return grads, nil
}

// Add is a + b, elementwise.
var Add Function = elementwise{"add", func(a, b float64) float64 { return a + b },
	func(a, b float64) float64 { return 1 }, func(a, b float64) float64 { return 1 }}

// Sub is a - b, elementwise.
var Sub Function = elementwise{"sub", func(a, b float64) float64 { return a - b },
	func(a, b float64) float64 { return 1 }, func(a, b float64) float64 { return -1 }}

// Mul is a * b, elementwise.
var Mul Function = elementwise{"mul", func(a, b float64) float64 { return a * b },
	func(a, b float64) float64 { return b }, func(a, b float64) float64 { return a }}

// unary is an elementwise function of one input with derivative d.
type unary struct {
	name string
	f, d func(x float64) float64
}

func (u unary) Name() string { return u.name }

func (u unary) Forward(ctx *Context, in ...*Tensor) (*Tensor, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("%s takes 1 input, got %d", u.name, len(in))
	}
	v, err := in[0].Values()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u.name, err)
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = u.f(x)
	}
	ctx.SaveForBackward(in[0])
	return New(u.name, out, in[0].Shape...), nil
}

func (u unary) Backward(ctx *Context, g *Tensor) ([]*Tensor, error) {
	x := ctx.Saved()[0]
	v, err := hostValues(u.name, x, g)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(v[0]))
	for i := range out {
		out[i] = v[1][i] * u.d(v[0][i])
	}
	return []*Tensor{New("d"+x.Name, out, x.Shape...)}, nil
}

// Tanh is tanh(x), elementwise.
var Tanh Function = unary{"tanh", math.Tanh, func(x float64) float64 { t := math.Tanh(x); return 1 - t*t }}

// Square is x*x, elementwise.
var Square Function = unary{"square", func(x float64) float64 { return x * x }, func(x float64) float64 { return 2 * x }}

// Exp is e^x, elementwise.
var Exp Function = unary{"exp", math.Exp, math.Exp}

// Scale returns the function x -> a*x.
func Scale(a float64) Function {
	return unary{fmt.Sprintf("scale(%g)", a), func(x float64) float64 { return a * x }, func(float64) float64 { return a }}
}

type sum struct{}

// Sum adds every element into a scalar.
var Sum Function = sum{}

func (sum) Name() string { return "sum" }

func (sum) Forward(ctx *Context, in ...*Tensor) (*Tensor, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("sum takes 1 input, got %d", len(in))
	}
	v, err := in[0].Values()
	if err != nil {
		return nil, fmt.Errorf("sum: %w", err)
	}
	var s float64
	for _, x := range v {
		s += x
	}
	ctx.Set("shape", in[0].Shape)
	ctx.Set("name", in[0].Name)
	return Scalar("sum", s), nil
}

func (sum) Backward(ctx *Context, g *Tensor) ([]*Tensor, error) {
	gv, err := g.Values()
	if err != nil {
		return nil, err
	}
	sh, _ := ctx.Get("shape")
	name, _ := ctx.Get("name")
	t := &Tensor{Shape: sh.([]int)}
	out := make([]float64, t.Len())
	for i := range out {
		out[i] = gv[0]
	}
	return []*Tensor{New(fmt.Sprintf("d%v", name), out, t.Shape...)}, nil
}

type matmul struct{}

// MatMul is the product of an (m, k) and a (k, n) matrix, both row-major: an (m, n) matrix.
var MatMul Function = matmul{}

func (matmul) Name() string { return "matmul" }

func (matmul) Forward(ctx *Context, in ...*Tensor) (*Tensor, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("matmul takes 2 inputs, got %d", len(in))
	}
	a, b := in[0], in[1]
	if len(a.Shape) != 2 || len(b.Shape) != 2 || a.Shape[1] != b.Shape[0] {
		return nil, fmt.Errorf("matmul: shapes %v and %v do not multiply", a.Shape, b.Shape)
	}
	v, err := hostValues("matmul", a, b)
	if err != nil {
		return nil, err
	}
	m, k, n := a.Shape[0], a.Shape[1], b.Shape[1]
	out := matmulHost(v[0], v[1], m, k, n, false, false)
	ctx.SaveForBackward(a, b)
	return New("matmul", out, m, n), nil
}

func (matmul) Backward(ctx *Context, g *Tensor) ([]*Tensor, error) {
	s := ctx.Saved()
	a, b := s[0], s[1]
	v, err := hostValues("matmul", a, b, g)
	if err != nil {
		return nil, err
	}
	m, k, n := a.Shape[0], a.Shape[1], b.Shape[1]
	grads := make([]*Tensor, 2)
	if ctx.NeedsGrad(0) { // dA = G B^T: (m,n) x (n,k)
		grads[0] = New("d"+a.Name, matmulHost(v[2], v[1], m, n, k, false, true), m, k)
	}
	if ctx.NeedsGrad(1) { // dB = A^T G: (k,m) x (m,n)
		grads[1] = New("d"+b.Name, matmulHost(v[0], v[2], k, m, n, true, false), k, n)
	}
	return grads, nil
}

// matmulHost is the (m, n) product of x (m, k) and y (k, n); tx and ty read x or y transposed
// (x stored (k, m), y stored (n, k)).
func matmulHost(x, y []float64, m, k, n int, tx, ty bool) []float64 {
	out := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				xv := x[i*k+p]
				if tx {
					xv = x[p*m+i]
				}
				yv := y[p*n+j]
				if ty {
					yv = y[j*k+p]
				}
				s += xv * yv
			}
			out[i*n+j] = s
		}
	}
	return out
}

// Chain applies one-input functions in order: Chain(tp, x, f, g) is g(f(x)).
func Chain(tp *Tape, x *Tensor, fns ...Function) (*Tensor, error) {
	var err error
	for _, f := range fns {
		if x, err = tp.Apply(f, x); err != nil {
			return nil, err
		}
	}
	return x, nil
}

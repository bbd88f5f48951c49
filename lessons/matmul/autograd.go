package matmul

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/autograd"
	"github.com/cudalessons/cudalessons/helpers/lab"
)

// MulFunc multiplies A (m x k) by B (k2 x n), row-major float32.
type MulFunc func(a []float32, m, k int, b []float32, k2, n int) ([]float32, error)

// Op is C = A·B as an autograd.Function, for any valid shape: Forward is Mul(A, B); Backward is
// dA = dC·Bᵀ and dB = Aᵀ·dC, two more products through Mul (the transposes are made on the host).
// GPUOp multiplies on the GPU with Multiply (the fastest float32-accurate step that takes each
// shape, the shared-memory step for the others); CPUOp is its CPU stand-in.
type Op struct {
	Label string
	Mul   MulFunc
}

// GPUOp is Op on env's GPU through Multiply.
func GPUOp(env *lab.Env) Op {
	return Op{Label: "GPU", Mul: func(a []float32, m, k int, b []float32, k2, n int) ([]float32, error) {
		c, _, err := Multiply(env, a, m, k, b, k2, n)
		return c, err
	}}
}

// CPUOp is Op on the CPU: float32 inputs, float64 sums, float32 outputs (what a float32-accurate
// kernel returns, up to its rounding). It needs no GPU.
var CPUOp = Op{Label: "CPU", Mul: func(a []float32, m, k int, b []float32, k2, n int) ([]float32, error) {
	s, err := ShapeOf(m, k, k2, n)
	if err != nil {
		return nil, err
	}
	if len(a) != m*k || len(b) != k2*n {
		return nil, fmt.Errorf("matmul: A has %d values for %d x %d and B %d for %d x %d", len(a), m, k, len(b), k2, n)
	}
	all := make([]int, m*n)
	for i := range all {
		all[i] = i
	}
	ref := Reference(s, a, b, all)
	c := make([]float32, len(ref))
	for i, v := range ref {
		c[i] = float32(v)
	}
	return c, nil
}}

// Name implements autograd.Function.
func (o Op) Name() string { return "matmul (" + o.Label + ")" }

func float32s(t *autograd.Tensor) ([]float32, error) {
	v, err := t.Values()
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out, nil
}

func float64s(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// transpose is the (c x r) transpose of x (r x c), row-major.
func transpose(x []float32, r, c int) []float32 {
	out := make([]float32, len(x))
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			out[j*r+i] = x[i*c+j]
		}
	}
	return out
}

// Forward implements autograd.Function: inputs A (m, k) and B (k, n), output C (m, n).
func (o Op) Forward(ctx *autograd.Context, in ...*autograd.Tensor) (*autograd.Tensor, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("matmul takes 2 inputs (A, B), got %d", len(in))
	}
	a, b := in[0], in[1]
	if len(a.Shape) != 2 || len(b.Shape) != 2 {
		return nil, fmt.Errorf("matmul: A and B must be matrices, got shapes %v and %v", a.Shape, b.Shape)
	}
	m, k, k2, n := a.Shape[0], a.Shape[1], b.Shape[0], b.Shape[1]
	av, err := float32s(a)
	if err != nil {
		return nil, err
	}
	bv, err := float32s(b)
	if err != nil {
		return nil, err
	}
	c, err := o.Mul(av, m, k, bv, k2, n)
	if err != nil {
		return nil, err
	}
	ctx.SaveForBackward(a, b)
	return autograd.New("C", float64s(c), m, n), nil
}

// Backward implements autograd.Function: dA = dC·Bᵀ (m x n times n x k), dB = Aᵀ·dC (k x m times m x n).
func (o Op) Backward(ctx *autograd.Context, g *autograd.Tensor) ([]*autograd.Tensor, error) {
	saved := ctx.Saved()
	a, b := saved[0], saved[1]
	m, k, n := a.Shape[0], a.Shape[1], b.Shape[1]
	gv, err := float32s(g)
	if err != nil {
		return nil, err
	}
	grads := make([]*autograd.Tensor, 2)
	if ctx.NeedsGrad(0) {
		bv, err := float32s(b)
		if err != nil {
			return nil, err
		}
		da, err := o.Mul(gv, m, n, transpose(bv, k, n), n, k)
		if err != nil {
			return nil, fmt.Errorf("matmul backward, dA = dC·Bᵀ: %w", err)
		}
		grads[0] = autograd.New("d"+a.Name, float64s(da), m, k)
	}
	if ctx.NeedsGrad(1) {
		av, err := float32s(a)
		if err != nil {
			return nil, err
		}
		db, err := o.Mul(transpose(av, m, k), k, m, gv, m, n)
		if err != nil {
			return nil, fmt.Errorf("matmul backward, dB = Aᵀ·dC: %w", err)
		}
		grads[1] = autograd.New("d"+b.Name, float64s(db), k, n)
	}
	return grads, nil
}

// GradCheck proves o's backward on shape s: the gradient of L = sum(W ⊙ (A·B)) for fixed random
// weights W, against central finite differences of L, at autograd.Float32Check's tolerance.
func GradCheck(o Op, s Shape, seed uint64) (autograd.GradCheckResult, error) {
	if err := s.Validate(); err != nil {
		return autograd.GradCheckResult{}, err
	}
	a, b := Inputs(s, seed)
	w, _ := Inputs(Shape{M: s.M, N: 1, K: s.N}, seed+1)
	A := autograd.Param("A", float64s(a), s.M, s.K)
	B := autograd.Param("B", float64s(b), s.K, s.N)
	W := autograd.New("W", float64s(w), s.M, s.N)
	loss := func(tp *autograd.Tape, in []*autograd.Tensor) (*autograd.Tensor, error) {
		c, err := tp.Apply(o, in[0], in[1])
		if err != nil {
			return nil, err
		}
		wc, err := tp.Apply(autograd.Mul, W, c)
		if err != nil {
			return nil, err
		}
		return tp.Apply(autograd.Sum, wc)
	}
	opts := autograd.Float32Check
	opts.MaxPerInput, opts.Seed = 64, seed
	return autograd.GradCheck(loss, []*autograd.Tensor{A, B}, opts)
}

package hostile

import (
	"strings"

	"github.com/cudalessons/cudalessons/helpers/autograd"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons/hopper"
	"github.com/cudalessons/cudalessons/lessons/matmul"
)

// mulFunc is a Multiply: C = A·B and the step that ran.
type mulFunc func(env *lab.Env, a []float32, m, k int, b []float32, k2, n int) ([]float32, string, error)

func lesson03Multiply(env *lab.Env, a []float32, m, k int, b []float32, k2, n int) ([]float32, string, error) {
	c, st, err := matmul.Multiply(env, a, m, k, b, k2, n)
	return c, st.Name, err
}

// transposed is the (c x r) transpose of x (r x c), row-major.
func transposed(x []float32, r, c int) []float32 {
	out := make([]float32, len(x))
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			out[j*r+i] = x[i*c+j]
		}
	}
	return out
}

// product is the float64 product of a (m x k) and b (k x n), every element.
func product(a []float32, m, k int, b []float32, n int) []float64 {
	s, _ := matmul.ShapeOf(m, k, k, n)
	all := make([]int, m*n)
	for i := range all {
		all[i] = i
	}
	return matmul.Reference(s, a, b, all)
}

// matmulAutogradOp is lesson 03's autograd op, matmul.Op (C = A·B; dA = dC·Bᵀ and dB = Aᵀ·dC, two more
// products), with mul as its Multiply: matmul.GPUOp's (lesson 03) or hopper.GPUOp's (lesson 08).
// The op built here is GPUOp's with the step of each product kept.
func matmulAutogradOp(name, lesson, call string, mul mulFunc, paths []string, predict func(gpu.DeviceInfo, Shape, []Input) string) *Op {
	return &Op{
		Name: name, Lesson: lesson, Call: call,
		Dims:    "(M, K, N): A is M x K, B is K x N, dC M x N; C, then dA and dB",
		Paths:   paths,
		Outputs: []string{"c", "da", "db"},
		Shapes: []Shape{
			{Dims: []int{64, 4, 96}, Note: "K < SmallK forward, longer products backward", Short: true},
			{Dims: []int{256, 384, 160}, Note: "the issue's product", Short: true},
			{Dims: []int{512, 1024, 512}, Note: "2^28 multiply-adds each way: the splits"},
		},
		Inputs: func(sh Shape, d Dist, seed uint64) []Input {
			M, K, N := sh.Dims[0], sh.Dims[1], sh.Dims[2]
			return []Input{draw(sh, d, "a", []int{M, K}, seed), draw(sh, d, "b", []int{K, N}, seed+1), draw(sh, Dists[0], "g", []int{M, N}, seed+2)}
		},
		Predict: predict,
		Run: func(env *lab.Env, sh Shape, in []Input) (map[string][]float32, string, error) {
			var steps []string
			op := matmul.Op{Label: name, Mul: func(a []float32, m, k int, b []float32, k2, n int) ([]float32, error) {
				c, st, err := mul(env, a, m, k, b, k2, n)
				steps = append(steps, st)
				return c, err
			}}
			ai, bi, gi := find(in, "a"), find(in, "b"), find(in, "g")
			a := autograd.Param("a", check.Float64s(ai.Data), ai.Shape...)
			b := autograd.Param("b", check.Float64s(bi.Data), bi.Shape...)
			tp := autograd.NewTape()
			defer tp.Free()
			c, err := tp.Apply(op, a, b)
			if err != nil {
				return nil, strings.Join(steps, "; "), err
			}
			if err := tp.BackwardWith(c, autograd.New("g", check.Float64s(gi.Data), gi.Shape...)); err != nil {
				return nil, strings.Join(steps, "; "), err
			}
			out, err := values(map[string]*autograd.Tensor{"c": c, "da": a.Grad, "db": b.Grad})
			return out, strings.Join(steps, "; "), err
		},
		Reference: func(sh Shape, in []Input, step string) []Output {
			M, K, N := sh.Dims[0], sh.Dims[1], sh.Dims[2]
			a, b, g := find(in, "a").Data, find(in, "b").Data, find(in, "g").Data
			steps := append(strings.Split(step, "; "), "", "", "")
			return []Output{
				productOutput("c", a, M, K, b, N, matmulDType(steps[0])),
				productOutput("da", g, M, N, transposed(b, K, N), K, matmulDType(steps[1])),
				productOutput("db", transposed(a, M, K), K, M, g, N, matmulDType(steps[2])),
			}
		},
		Torch: `
a = I["a"].clone().requires_grad_(True)
b = I["b"].clone().requires_grad_(True)
c = a @ b
c.backward(I["g"])
return {"c": c, "da": a.grad, "db": b.grad}`,
	}
}

// predictProducts is a Multiply's predicted step for the op's three products (C = A B, dA = dC Bᵀ,
// dB = Aᵀ dC), from its dispatch's own rule on the operands' values.
func predictProducts(one func(dev gpu.DeviceInfo, M, K, N int, a, b []float32) string) func(gpu.DeviceInfo, Shape, []Input) string {
	return func(dev gpu.DeviceInfo, sh Shape, in []Input) string {
		M, K, N := sh.Dims[0], sh.Dims[1], sh.Dims[2]
		a, b, g := find(in, "a").Data, find(in, "b").Data, find(in, "g").Data
		return strings.Join([]string{one(dev, M, K, N, a, b), one(dev, M, N, K, g, transposed(b, K, N)), one(dev, K, M, N, transposed(a, M, K), g)}, "; ")
	}
}

// lesson03Pick is the step matmul.Multiply runs on a (M x K) and b (K x N) on dev: matmul.Choose,
// which takes the values (their binade spans decide the splits, an Inf or NaN a float32 step).
func lesson03Pick(dev gpu.DeviceInfo, M, K, N int, a, b []float32) string {
	s, _ := matmul.ShapeOf(M, K, K, N)
	return matmul.Choose(s, dev, a, b).Step.Name
}

// lesson08Pick is the step hopper.Multiply runs: its Multiplier's Choose.
func lesson08Pick(dev gpu.DeviceInfo, M, K, N int, a, b []float32) string {
	s, _ := matmul.ShapeOf(M, K, K, N)
	name, _, _, _ := hopper.Multiplier{MinMACs: hopper.SplitMinMACs}.Choose(s, dev, a, b)
	return name
}

func matmulOp() *Op {
	return matmulAutogradOp("matmul op", "03", "matmul.GPUOp(env) (Multiply for C, dA and dB) through an autograd tape, Backward with dC",
		lesson03Multiply, []string{matmul.Steps[9].Name, matmul.Steps[8].Name, matmul.AnyShape.Name, matmul.ThinK.Name}, predictProducts(lesson03Pick))
}

func hopperOp() *Op {
	return matmulAutogradOp("hopper op", "08", "hopper.GPUOp(env) (hopper.Multiply for C, dA and dB) through an autograd tape, Backward with dC",
		hopper.Multiply, []string{hopper.Split.Name, hopper.Lesson03Prefix}, predictProducts(lesson08Pick))
}

package hopper

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons/matmul"
)

// SplitMinMACs is the size (M x N x K multiply-adds) from which Multiply runs the split on Hopper:
// below it, the split's own passes over A and B (and the padding) cost more than the product saves.
// Measured on the H100 (2026-11-24): at 1000x3000x777 (2.3e9) the split took 56.7 µs against 163 µs
// for lesson 03's pick; at 513x129x1025 (6.8e7) 38.0 µs against 34.7 µs, at 255^3 (1.7e7) 22.7
// against 21.9 µs, at 4097x4097x1 148.5 µs against 53.9 µs.
const SplitMinMACs = 1 << 28

// Multiplier is Multiply with its threshold: the split on Hopper from MinMACs multiply-adds up.
type Multiplier struct{ MinMACs int64 }

// Multiply computes C = A·B for A (m x k) and B (k2 x n), row-major float32, with float32 accuracy
// over float32's whole range: on a Hopper GPU with the split step (5), which takes any shape, from
// SplitMinMACs multiply-adds up, where every value is finite and every row of A and column of B
// spans at most matmul.SplitSpanFP16 binades; the split then runs on copies of A and B whose rows
// and columns are moved by powers of two into the window where fp16's hi + lo keeps 22 bits
// (matmul.SplitTop), and C is moved back. Everything else goes to lesson 03's Multiply, which
// picks its own float32-accurate step the same way (matmul.Choose). It refuses mismatched or empty
// shapes and products over the free device memory before any launch, and returns the name of the
// step used; Multiplier.Choose says which and why without running. (Lesson 03's Multiply cannot
// call this lesson's steps itself: lesson 08 builds on lesson 03, so this is the entry point with
// both.)
func Multiply(env *lab.Env, a []float32, m, k int, b []float32, k2, n int) ([]float32, string, error) {
	return Multiplier{MinMACs: SplitMinMACs}.Multiply(env, a, m, k, b, k2, n)
}

// Choose is the step mu's Multiply runs on A (m x k) and B (k x n) on d, and why: this lesson's
// split (with the powers of two of its rows and columns), or lesson 03's choice.
func (mu Multiplier) Choose(s matmul.Shape, d gpu.DeviceInfo, a, b []float32) (name, why string, row, col []int) {
	if !mu.UsesSplit(s, d) {
		ch := matmul.Choose(s, d, a, b)
		return Lesson03Prefix + ch.Step.Name, "under lesson 08's split threshold or not on Hopper; lesson 03: " + ch.Why, nil, nil
	}
	r := matmul.RangesOf(a, s.M, s.K, b, s.N)
	if r.NonFinite != "" || r.Span > matmul.SplitSpanFP16 {
		ch := matmul.Choose(s, d, a, b)
		return Lesson03Prefix + ch.Step.Name, "lesson 03: " + ch.Why, nil, nil
	}
	row, col = r.Shifts()
	return Split.Name, fmt.Sprintf("the fp16x3 split on rows of A and columns of B moved by powers of two to 2^%d (widest span %d binades, at most %d)", matmul.SplitTop, r.Span, matmul.SplitSpanFP16), row, col
}

// UsesSplit reports whether Multiply runs the split on s on d (for finite inputs whose rows and
// columns span at most matmul.SplitSpanFP16 binades: Choose checks them).
func (mu Multiplier) UsesSplit(s matmul.Shape, d gpu.DeviceInfo) bool {
	_, err := Split.Plan(s, d)
	return err == nil && int64(s.M)*int64(s.N)*int64(s.K) >= mu.MinMACs
}

// Multiply is the package's Multiply with mu's threshold.
func (mu Multiplier) Multiply(env *lab.Env, a []float32, m, k int, b []float32, k2, n int) ([]float32, string, error) {
	s, err := matmul.ShapeOf(m, k, k2, n)
	if err != nil {
		return nil, "", err
	}
	if !env.GPU() {
		return nil, "", fmt.Errorf("matmul: running kernels needs a GPU (%s)", env.Mode)
	}
	if len(a) != m*k || len(b) != k2*n {
		return nil, "", fmt.Errorf("matmul: A has %d values for %d x %d and B %d for %d x %d", len(a), m, k, len(b), k2, n)
	}
	var name string
	var row, col []int
	if mu.UsesSplit(s, env.Device()) { // below it, lesson 03's Multiply measures the inputs itself
		name, _, row, col = mu.Choose(s, env.Device(), a, b)
	}
	if row == nil {
		c, st, err := matmul.Multiply(env, a, m, k, b, k2, n)
		return c, Lesson03Prefix + st.Name, err
	}
	if err := matmul.CheckMemory(env, s, true); err != nil {
		return nil, name, err
	}
	mp, err := matmul.UploadProblem(env, s, matmul.ScaleRows(a, m, k, row), matmul.ScaleCols(b, k, n, col))
	if err != nil {
		return nil, Split.Name, err
	}
	p := AccurateFrom(env, mp)
	defer p.Free()
	run, _, _, err := p.Launcher(Split, "")
	if err != nil {
		return nil, Split.Name, err
	}
	if err := run(); err != nil {
		return nil, Split.Name, err
	}
	c, err := p.Cd.ToHost()
	if err == nil {
		matmul.Unscale(c, m, n, row, col)
	}
	return c, Split.Name, err
}

// Lesson03Prefix starts the name of a lesson 03 step that Multiply ran.
const Lesson03Prefix = "lesson 03: "

// Lesson08Prefix starts the name of one of this lesson's steps where another lesson's run records
// it (KernelBench's problems).
const Lesson08Prefix = "lesson 08: "

// GPUOp is lesson 03's autograd op (C = A·B, any shape, backward through two more products) on env's
// GPU through Multiply: every product large enough runs the split on Hopper's tensor cores.
func GPUOp(env *lab.Env) matmul.Op { return Multiplier{MinMACs: SplitMinMACs}.Op(env) }

// Op is the autograd op through mu's Multiply.
func (mu Multiplier) Op(env *lab.Env) matmul.Op {
	return matmul.Op{Label: "GPU, Hopper's split where it applies", Mul: func(a []float32, m, k int, b []float32, k2, n int) ([]float32, error) {
		c, _, err := mu.Multiply(env, a, m, k, b, k2, n)
		return c, err
	}}
}

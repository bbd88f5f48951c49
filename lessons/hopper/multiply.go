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

// Multiply computes C = A·B for A (m x k) and B (k2 x n), row-major float32, with float32 accuracy:
// on a Hopper GPU with the split step (5), which takes any shape, from SplitMinMACs multiply-adds up
// where it takes the inputs (every value finite and below fp16's largest, 65504), and otherwise with
// lesson 03's Multiply (the fastest float32-accurate step of lesson 03 that takes the shape). It
// refuses mismatched or empty shapes and products over the free device memory before any launch,
// and returns the name of the step used. (Lesson 03's Multiply cannot call this lesson's steps
// itself: lesson 08 builds on lesson 03, so this is the entry point with both.)
func Multiply(env *lab.Env, a []float32, m, k int, b []float32, k2, n int) ([]float32, string, error) {
	return Multiplier{MinMACs: SplitMinMACs}.Multiply(env, a, m, k, b, k2, n)
}

// UsesSplit reports whether Multiply runs the split on s on d (for inputs in fp16's range).
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
	// The lengths of a and b are checked on both paths, by lesson 03's Multiply and by UploadProblem.
	if !env.GPU() {
		return nil, "", fmt.Errorf("matmul: running kernels needs a GPU (%s)", env.Mode)
	}
	if !mu.UsesSplit(s, env.Device()) || !matmul.FP16Safe(a) || !matmul.FP16Safe(b) {
		c, st, err := matmul.Multiply(env, a, m, k, b, k2, n)
		return c, Lesson03Prefix + st.Name, err
	}
	if err := matmul.CheckMemory(env, s, true); err != nil {
		return nil, Split.Name, err
	}
	mp, err := matmul.UploadProblem(env, s, a, b)
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

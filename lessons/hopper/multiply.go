package hopper

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons/matmul"
)

// Multiply computes C = A·B for A (m x k) and B (k2 x n), row-major float32, with float32 accuracy:
// on a Hopper GPU with the split step (5), which takes any shape, where it takes the inputs (every
// value finite and below fp16's largest, 65504), and otherwise with lesson 03's
// Multiply (the fastest float32-accurate step of lesson 03 that takes the shape). It refuses
// mismatched or empty shapes and products over the free device memory before any launch, and
// returns the name of the step used. (Lesson 03's Multiply cannot call this lesson's steps itself:
// lesson 08 builds on lesson 03, so this is the entry point with both.)
func Multiply(env *lab.Env, a []float32, m, k int, b []float32, k2, n int) ([]float32, string, error) {
	s, err := matmul.ShapeOf(m, k, k2, n)
	if err != nil {
		return nil, "", err
	}
	if len(a) != m*k || len(b) != k2*n {
		return nil, "", fmt.Errorf("matmul: A has %d values for %d x %d and B %d for %d x %d", len(a), m, k, len(b), k2, n)
	}
	if !env.GPU() {
		return nil, "", fmt.Errorf("matmul: running kernels needs a GPU (%s)", env.Mode)
	}
	if _, err := Split.Plan(s, env.Device()); err != nil || !matmul.FP16Safe(a) || !matmul.FP16Safe(b) {
		c, st, err := matmul.Multiply(env, a, m, k, b, k2, n)
		return c, "lesson 03: " + st.Name, err
	}
	if err := matmul.CheckMemory(env, s, true); err != nil {
		return nil, Split.Name, err
	}
	mp, err := matmul.UploadProblem(env, s, a, b)
	if err != nil {
		return nil, Split.Name, err
	}
	p := &AccurateProblem{Problem: mp, env: env}
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

// GPUOp is lesson 03's autograd op (C = A·B, any shape, backward through two more products) on env's
// GPU through Multiply: every product that the split takes runs on Hopper's tensor cores.
func GPUOp(env *lab.Env) matmul.Op {
	return matmul.Op{Label: "GPU, Hopper's split where it applies", Mul: func(a []float32, m, k int, b []float32, k2, n int) ([]float32, error) {
		c, _, err := Multiply(env, a, m, k, b, k2, n)
		return c, err
	}}
}

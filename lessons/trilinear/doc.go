// Package trilinear is lesson 07: trilinear interpolation as a custom autograd op, after kwea123's
// tutorial on writing a PyTorch C++/CUDA extension (the fifth article). Each of N points has its
// own cell of 8 corner feature rows; the op interpolates them at the point:
//
//	feats (N, 8, F), points (N, 3) in [-1, 1]  ->  out (N, F)
//	u, v, w = (p + 1) / 2;  out[n][f] = sum_k W_k(u, v, w) * feats[n][k][f]
//
// with W_k the products of u or 1-u, v or 1-v, w or 1-w (corner k = 4*iu + 2*iv + iw).
//
// problem.go holds the shape, the inputs, the float64 references (forward, both gradients, the
// fused training step's loss) and the work of each step; steps.go the steps and the limits each
// refuses before a launch; gpu.go the GPU problem (upload, poison, check, measure); op.go the
// autograd Functions (CPU float64 and GPU, dispatching to the fastest step that takes a shape) and
// their gradient checks; baseline.go the PyTorch baselines; run.go the lesson's Run, tables,
// figures and targets; notebook.go what the notebook's cells call; exercises.go the exercises.
//
//	env, err := lab.Open()
//	if err != nil { ... }
//	defer env.Close()
//	run, err := env.Results(trilinear.Lesson, false) // measured on a GPU, recorded otherwise
//	trilinear.ForwardTable(run).Display()
package trilinear

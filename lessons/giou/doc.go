// Package giou is lesson 06: a custom GIoU loss operator for object detection, forward and
// backward, after Chaim Rand's article on replacing a per-sample PyTorch loss loop with a fused CUDA
// kernel (the fourth article). Each image of a batch has its own number of target boxes; the loss is
//
//	L = mean over the valid boxes of (1 - GIoU(pred, target)),  GIoU = I/U - (E - U)/E
//
// with I the intersection, U the union and E the smallest enclosing box's area (each denominator
// clamped at 1e-5, the article's epsilon).
//
// problem.go holds the batch (ragged and padded), its seeded generator, the float64 references
// (loss, gradient) and the conventions for degenerate boxes; steps.go the steps and the limits each
// refuses before a launch; gpu.go the GPU problem (upload, poison, check, measure); op.go the
// autograd Functions (CPU float64 and GPU, dispatching to the fastest kernel that takes a batch) and
// their gradient checks; baseline.go the PyTorch baselines; run.go the lesson's Run, tables,
// figures and targets; notebook.go what the notebook's cells call; exercises.go the exercises.
//
//	env, err := lab.Open()
//	if err != nil { ... }
//	defer env.Close()
//	run, err := env.Results(giou.Lesson, false) // measured on a GPU, recorded otherwise
//	giou.StepsTable(run).Display()
package giou

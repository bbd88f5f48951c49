// Package conv is lesson 05: convolution as an implicit GEMM, and the fused conv + bias + ReLU +
// max pool of AlexNet's first layer, after the KernelBench article's generated kernels (its part
// 3). The layer:
//
//	x (N, C, H, W), w (K, C, R, R), bias (K)  ->  y (N, K, OH, OW),  OH = (H + 2P - R)/S + 1
//	y[n][k][oh][ow] = bias[k] + sum_{c,r,s} x[n][c][oh*S-P+r][ow*S-P+s] * w[k][c][r][s]
//	pool[n][k][ph][pw] = max over the 3 x 3 window at (2ph, 2pw) of ReLU(y)   (MaxPool2d(3, 2))
//
// problem.go holds the shapes, the inputs and the float64 references; steps.go the steps and the
// limits each refuses before a launch; tolerance.go the checks' bounds; gpu.go the GPU problem
// (upload, poison, check, measure); baseline.go the PyTorch baselines (cuDNN with TF32 off and on,
// the eager conv + ReLU + pool, torch.compile of it); run.go the lesson's Run, tables, figures and
// targets; notebook.go what the notebook's cells call; exercises.go the exercises.
//
//	env, err := lab.Open()
//	if err != nil { ... }
//	defer env.Close()
//	run, err := env.Results(conv.Lesson, false) // measured on a GPU, recorded otherwise
//	conv.ConvTable(run, conv.CaseAlexNet).Display()
package conv

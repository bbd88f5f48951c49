// Package rwkv is lesson 01: the RWKV time-mix kernel (BlinkDL's RWKV-CUDA), a depthwise causal
// convolution with one T-tap filter per channel,
//
//	out[b][c][t] = eps + sum_{u=0..t} w[c][(T-1)-(t-u)] * k[b][c][u]
//
// written as a ladder of CUDA kernels (kernels/rwkv), each checked against a float64 CPU reference on
// NaN-poisoned outputs and measured against the article's PyTorch expression on the same GPU:
//
//	v0 naive, v1 shared memory, v2 float4 (4 outputs per thread), v3 batch grouping (the article's
//	last step), v4 balanced triangles (announced, never written), v5 register tiles with warps across
//	the batch, v6 TF32 tensor cores (a triangular Toeplitz product), v7 3xTF32 (inputs split into hi + lo;
//	the tensor core's float32 accumulation still limits it),
//	v8 TF32 through mma.sync PTX (a register-resident Toeplitz window and a cp.async producer warp).
//
// problem.go holds the shape, the inputs and the float64 references of the forward and the backward
// (dk, dw), proven by finite differences; steps.go the steps and the limits each refuses before a
// launch; forward.go the GPU problem (upload, poison, check, measure); run.go the lesson's Run, the
// article's table, tables and figures; backward*.go the backward ladder and the autograd op.
//
//	env, err := lab.Open()
//	if err != nil { ... }
//	defer env.Close()
//	run, err := env.Results(rwkv.Lesson, false) // measured on a GPU, recorded otherwise
//	rwkv.ForwardTable(run).Display()
package rwkv

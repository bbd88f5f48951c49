// Package rwkv is lesson 01: the RWKV time-mix kernel (BlinkDL's RWKV-CUDA), a depthwise causal
// convolution with one T-tap filter per channel,
//
//	out[b][c][t] = eps + sum_{u=0..t} w[c][(T-1)-(t-u)] * k[b][c][u]
//
// written as a ladder of CUDA kernels from a naive one to register tiling and tensor cores, each
// checked against a float64 CPU reference on NaN-poisoned outputs and measured against the
// article's PyTorch expression on the same GPU. problem.go holds the shape, the inputs and the
// float64 references for the forward and the backward (dk, dw), proven by finite differences.
package rwkv

// Package conv holds the CUDA sources of lesson 05, convolution as an implicit GEMM and the fused
// conv + bias + ReLU + max pool of AlexNet's first layer (the KernelBench article, part 3): one file
// per step, whose top comment says what changed from the step before, why it is faster, its launch
// and its limits.
//
//   - 1_direct.cu, 2_shared.cu: direct convolution, then with the input tile and filters in shared memory
//   - 3_igemm.cu: implicit GEMM on the CUDA cores (im2col gathered on the fly, float32-exact)
//   - 4_tensor_core.cu, 5_cp_async.cu: implicit GEMM on the tensor cores (TF32 and FP16), then
//     double-buffered with cp.async
//   - 6_fused_atomic.cu, 7_fused_tile.cu: conv + bias + ReLU + max pool (3, 2) in one kernel, with
//     integer atomicMax on the float bits, then pooled in the epilogue without atomics
//   - solutions/: the notebook's exercises, out of the notebook's sight
package conv

import (
	"embed"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

//go:embed *.cu solutions/*.cu
var files embed.FS

// Kernels is the folder of the lesson's CUDA sources.
var Kernels = compile.Files{FS: files, Pkg: "kernels/conv"}

// Source returns one file, e.g. Source("3_igemm.cu") or Source("solutions/ex1_direct.cu").
func Source(file string) (compile.Source, error) { return Kernels.Source(file) }

// Files lists every embedded .cu file, sorted.
func Files() []string { return Kernels.List() }

// Package hopper holds the CUDA sources of lesson 08, Hopper's tensor cores: C = A·B with A (M x K)
// and B (K x N) row-major in fp16 or bfloat16 and C in the same type, summed in float32. One file
// per step (1_wgmma.cu .. 4_persistent.cu), each with a comment at its top saying what changed from
// the step before, why it is faster, its launch shape and its limits. Every file needs compute
// capability 9.0 exactly and is compiled for compute_90a: wgmma and setmaxnreg exist only there
// (Blackwell's tensor cores have other instructions).
package hopper

import (
	"embed"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

//go:embed *.cu
var files embed.FS

// Kernels is the folder of the lesson's CUDA sources.
var Kernels = compile.Files{FS: files, Pkg: "kernels/hopper"}

// Source returns one file as a compile.Source, e.g. Source("2_tma.cu").
func Source(file string) (compile.Source, error) { return Kernels.Source(file) }

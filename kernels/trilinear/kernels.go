// Package trilinear holds the CUDA sources of lesson 07, trilinear interpolation as a custom
// autograd op (after kwea123's PyTorch C++/CUDA extension tutorial): one file per step, whose top
// comment says what changed from the step before, why it is faster, its launch and its limits.
//
//   - forward: 1_article.cu (as written), 2_coalesced.cu, 3_float4.cu, 4_half.cu (half, bfloat16)
//   - backward: 5_backward_feats.cu, 6_backward_points.cu, and 7_fused.cu (a fused training step)
//   - solutions/: the notebook's exercises, out of the notebook's sight
package trilinear

import (
	"embed"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

//go:embed *.cu solutions/*.cu
var files embed.FS

// Kernels is the folder of the lesson's CUDA sources.
var Kernels = compile.Files{FS: files, Pkg: "kernels/trilinear"}

// Source returns one file, e.g. Source("3_float4.cu") or Source("solutions/ex1_coalesced.cu").
func Source(file string) (compile.Source, error) { return Kernels.Source(file) }

// Files lists every embedded .cu file, sorted.
func Files() []string { return Kernels.List() }

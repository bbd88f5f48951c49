// Package giou holds the CUDA sources of lesson 06, a custom GIoU loss operator for object detection
// (after Chaim Rand's article on fusing a box loss into one CUDA kernel): one file per step, whose
// top comment says what changed from the step before, why it is faster, its launch and its limits.
//
//   - the article's: 1_article.cu (one thread per box slot, invalid -> 0, and the second pass that
//     forms the mean), 2_skip.cu (the conditional skip of invalid slots)
//   - ours: 3_block_mean.cu (one block per image, straight to the mean with a last-block finish),
//     4_half.cu (half and bfloat16 boxes, no cast pass), 5_fused.cu (forward and backward fused),
//     6_warp.cu (one warp per image: one last-block ticket per eight images, loss and fused)
//   - solutions/: the notebook's exercises, out of the notebook's sight
package giou

import (
	"embed"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

//go:embed *.cu solutions/*.cu
var files embed.FS

// Kernels is the folder of the lesson's CUDA sources.
var Kernels = compile.Files{FS: files, Pkg: "kernels/giou"}

// Source returns one file, e.g. Source("3_block_mean.cu") or Source("solutions/ex1_intersection.cu").
func Source(file string) (compile.Source, error) { return Kernels.Source(file) }

// Files lists every embedded .cu file, sorted.
func Files() []string { return Kernels.List() }

// Package reduce holds the CUDA sources of lesson 04 (row reductions: softmax and layer norm,
// after the KernelBench article's generated kernels): one file per step, whose top comment says
// what changed, why it is faster, its launch shape and its limits.
//
//   - softmax over rows: s1_naive.cu, s2_block_tree.cu, s3_warp_float4.cu, s4_online.cu,
//     s5_cluster.cu (read once, Hopper clusters), s6_warp_row.cu (short rows), s7_half.cu,
//     s8_cluster_any.cu (any length, read once: 16-block clusters, shared memory, heads and tails),
//     s8b_cluster_stream.cu (long rows streamed twice, the second read from L2),
//     s9_split_row.cu (rows over many blocks, two launches: no clusters needed), and the softmax
//     op's backward s10_backward.cu
//   - layer norm: l1_block_per_sample.cu, l2_partial_sums.cu, l3_welford.cu, l4_fused.cu,
//     l5_row_on_chip.cu (short samples: read once), l6_grid_resident.cu (long samples held by all
//     SMs at once: read once), l7_backward.cu
//   - util.cu: counts non-finite outputs for the checks; solutions/: the exercises' solutions
package reduce

import (
	"embed"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

//go:embed *.cu solutions/*.cu
var files embed.FS

// Kernels is the folder of the lesson's CUDA sources.
var Kernels = compile.Files{FS: files, Pkg: "kernels/reduce"}

// Source returns one file, e.g. Source("s4_online.cu") or Source("solutions/ex1_warp_reduce.cu").
func Source(file string) (compile.Source, error) { return Kernels.Source(file) }

// Files lists the embedded step files (not the solutions), sorted.
func Files() []string { return Kernels.Steps() }

// Package oneflow holds the CUDA sources of lesson 02 (bandwidth and atomics, after BBuf's notes on
// OneFlow's elementwise template, FastAtomicAdd and UpsampleNearest2D): one file per step, whose
// top comment says what changed and why.
//
//   - elementwise z = x*y: 1_naive.cu, 2_packed.cu
//   - half atomics (a dot product into one address): a_1_half_atomic.cu, a_2_half2_atomic.cu,
//     a_3_fast_specialized.cu, a_4_block_reduce.cu
//   - nearest 2x upsample, forward and backward: u_1_generic.cu, u_2_pack2x.cu
//   - the solutions of the notebook's exercises: solutions/
package oneflow

import (
	"embed"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

//go:embed *.cu solutions/*.cu
var files embed.FS

// Kernels is the folder of the lesson's CUDA sources.
var Kernels = compile.Files{FS: files, Pkg: "kernels/oneflow"}

// Source returns one step's file, e.g. Source("2_packed.cu").
func Source(file string) (compile.Source, error) { return Kernels.Source(file) }

// Files lists the steps' .cu files (not the exercises' solutions), sorted: what the notebook compiles.
func Files() []string { return Kernels.Steps() }

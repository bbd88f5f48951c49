// Package rwkv holds the CUDA sources of lesson 01, the RWKV time-mix kernel: the forward ladder
// (0_naive.cu .. 7_tensorcore_3xtf32.cu), the backward kernels (bwd_*.cu) and the solutions of the
// notebook's exercises (solutions/). Each step is its own file; the comment at its top says what
// changed and why.
package rwkv

import (
	"embed"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

//go:embed *.cu solutions/*.cu
var files embed.FS

// Kernels is the folder of the lesson's CUDA sources.
var Kernels = compile.Files{FS: files, Pkg: "kernels/rwkv"}

// Source returns one step's file, e.g. Source("3_batch_group.cu").
func Source(file string) (compile.Source, error) { return Kernels.Source(file) }

// Files lists every embedded .cu file, sorted.
func Files() []string { return Kernels.List() }

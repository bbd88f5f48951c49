// Package matmul holds the CUDA sources of lesson 03, matrix multiplication C = A·B in float32
// (A is M x K, B is K x N, C is M x N, all row-major): one file per step of the ladder
// (1_naive.cu .. 9_split.cu) and the solutions of the notebook's exercises (solutions/). The comment
// at the top of each file says what changed from the step before, why it is faster, its launch shape
// and its limits.
package matmul

import (
	"embed"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

//go:embed *.cu solutions/*.cu
var files embed.FS

// Kernels is the folder of the lesson's CUDA sources.
var Kernels = compile.Files{FS: files, Pkg: "kernels/matmul"}

// Source returns one file as a compile.Source, e.g. Source("5_blocktile_2d.cu").
func Source(file string) (compile.Source, error) { return Kernels.Source(file) }

// Files lists every embedded .cu file, sorted.
func Files() []string { return Kernels.List() }

// Package vecadd holds the CUDA sources of lesson 00, the first kernel: c = a + b on float32, in
// three steps. Each step is its own file; the comment at its top says what changed and why.
package vecadd

import (
	"embed"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

//go:embed *.cu
var files embed.FS

// Kernels is the folder of the lesson's CUDA sources.
var Kernels = compile.Files{FS: files, Pkg: "kernels/vecadd"}

// Source returns one step's file, e.g. Source("3_float4.cu").
func Source(file string) (compile.Source, error) { return Kernels.Source(file) }

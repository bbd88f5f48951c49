// Package vecadd holds the CUDA sources of lesson 00, the first kernel: c = a + b on float32, in
// three steps. Each step is its own file; the comment at its top says what changed and why.
package vecadd

import (
	"embed"
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

//go:embed *.cu
var files embed.FS

// Source returns one step's file, e.g. Source("3_float4.cu").
func Source(file string) (compile.Source, error) {
	b, err := files.ReadFile(file)
	if err != nil {
		return compile.Source{}, fmt.Errorf("kernels/vecadd: no file %s", file)
	}
	return compile.Source{Name: file, Code: string(b)}, nil
}

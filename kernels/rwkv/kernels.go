// Package rwkv holds the CUDA sources of lesson 01, the RWKV time-mix kernel: the forward ladder
// (0_naive.cu .. 7_tensorcore_3xtf32.cu), the backward kernels (bwd_*.cu) and the solutions of the
// notebook's exercises (solutions/). Each step is its own file; the comment at its top says what
// changed and why.
package rwkv

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

//go:embed *.cu solutions/*.cu
var files embed.FS

// Source returns one file, e.g. Source("3_batch_group.cu") or Source("solutions/ex1_shared.cu").
func Source(file string) (compile.Source, error) {
	b, err := files.ReadFile(file)
	if err != nil {
		return compile.Source{}, fmt.Errorf("kernels/rwkv: no file %s", file)
	}
	return compile.Source{Name: file, Code: string(b)}, nil
}

// Files lists every embedded .cu file (solutions/ included), sorted.
func Files() []string {
	var out []string
	fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, path)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// Package oneflow holds the CUDA sources of lesson 02 (bandwidth and atomics, after BBuf's notes on
// OneFlow's elementwise template, FastAtomicAdd and UpsampleNearest2D): one file per step, whose
// top comment says what changed and why.
//
//   - elementwise z = x*y: 1_naive.cu, 2_packed.cu
//   - half atomics (a dot product into one address): a_1_half_atomic.cu, a_2_half2_atomic.cu,
//     a_3_fast_specialized.cu, a_4_block_reduce.cu
//   - nearest 2x upsample, forward and backward: u_1_generic.cu, u_2_pack2x.cu
package oneflow

import (
	"embed"
	"fmt"
	"sort"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

//go:embed *.cu
var files embed.FS

// Source returns one step's file, e.g. Source("2_packed.cu").
func Source(file string) (compile.Source, error) {
	b, err := files.ReadFile(file)
	if err != nil {
		return compile.Source{}, fmt.Errorf("kernels/oneflow: no file %s", file)
	}
	return compile.Source{Name: file, Code: string(b)}, nil
}

// Files lists every .cu file of the lesson, sorted.
func Files() []string {
	entries, _ := files.ReadDir(".")
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

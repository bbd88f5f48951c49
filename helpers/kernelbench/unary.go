package kernelbench

import (
	_ "embed"
	"strconv"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

//go:embed unary.cu
var unary string

// The kernels of unary.cu: UnaryKernel moves 16-byte packs (16-byte aligned x and y), UnaryPack1Kernel
// one float per thread per trip (any alignment); both launched with (x, y, int64 n, float32 a,
// float32 b) on any 1D grid of UnaryBlock threads per block.
const (
	UnaryKernel      = "kb_unary"
	UnaryPack1Kernel = "kb_unary_pack1"
	UnaryBlock       = 256
)

// Unary is the CUDA source of the elementwise problems (unary.cu), compiled with the defines of
// UnaryDefines.
func Unary() compile.Source {
	return compile.Source{Name: "kernelbench_unary.cu", Code: unary}
}

// UnaryDefines are unary.cu's defines for op e with ppt 16-byte packs per thread per trip and the
// streaming cache hint or not.
func UnaryDefines(e Elementwise, ppt int, streaming bool) []string {
	hint := "HINT=0"
	if streaming {
		hint = "HINT=1"
	}
	return []string{"ACT=" + e.Act, "PPT=" + strconv.Itoa(ppt), hint}
}

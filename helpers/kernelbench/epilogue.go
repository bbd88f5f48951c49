package kernelbench

import (
	_ "embed"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

//go:embed relu_bias.cu
var reluBias string

// ReLUBiasKernel is the kernel of ReLUBias: y = relu(y) + bias[k] in place over an NCHW tensor,
// launched with (y, bias, int64 n, int32 OH*OW, int32 K) on any 1D grid.
const ReLUBiasKernel = "kb_relu_bias"

// ReLUBias is the CUDA source of the level-2 problem's tail after the lesson's conv step (relu_bias.cu).
func ReLUBias() compile.Source {
	return compile.Source{Name: "kernelbench_relu_bias.cu", Code: reluBias}
}

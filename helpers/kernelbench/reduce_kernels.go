package kernelbench

import (
	_ "embed"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

// The kernels of the reductions and norms that no lesson step runs as they stand: a reduction
// over a middle dimension (dim_reduce.cu), RMS norm over channels (rms_norm.cu), a row divided by
// its L1 or L2 norm (row_norm.cu). Log-softmax runs lesson 04's step 9 with LOG_SOFTMAX.
var (
	//go:embed dim_reduce.cu
	dimReduce string
	//go:embed rms_norm.cu
	rmsNorm string
	//go:embed row_norm.cu
	rowNorm string
)

// The kernels' names: DimReduceKernel launched with (x, y, int32 R, int32 inner), RMSNormKernel
// with (x, y, int64 positions, int64 hw, float32 eps), RowNormKernel with (x, y, int32 rows,
// int32 cols).
const (
	DimReduceKernel = "kb_dim_reduce"
	RMSNormKernel   = "kb_rms_norm"
	RowNormKernel   = "kb_row_norm"
)

// DimReduce is the CUDA source of the reductions over dimension 1 (defines OP and BY).
func DimReduce() compile.Source {
	return compile.Source{Name: "kernelbench_dim_reduce.cu", Code: dimReduce}
}

// RMSNormSource is the CUDA source of RMS norm over the channels (define C).
func RMSNormSource() compile.Source {
	return compile.Source{Name: "kernelbench_rms_norm.cu", Code: rmsNorm}
}

// RowNorm is the CUDA source of the L1 and L2 row norms (define NORM).
func RowNorm() compile.Source {
	return compile.Source{Name: "kernelbench_row_norm.cu", Code: rowNorm}
}

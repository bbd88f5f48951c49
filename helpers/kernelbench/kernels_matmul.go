package kernelbench

import (
	_ "embed"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

//go:embed gemv.cu
var gemvSrc string

//go:embed transpose.cu
var transposeSrc string

//go:embed linear_epilogue.cu
var linearEpilogueSrc string

//go:embed split_transposed.cu
var splitTransposedSrc string

// The kernels of the matrix-product family that no lesson has (one file each beside relu_bias.cu).
const (
	// GEMVKernel is y = A x, launched with (A, x, y, int32 M, int64 K), block GEMVThreads, any 1D grid.
	GEMVKernel = "kb_gemv"
	// TransposeKernel is out = in^T, launched with (in, out, int32 rows, int32 cols), grid
	// (ceil(cols/32), ceil(rows/32)), block (32, 8).
	TransposeKernel = "kb_transpose"
	// LinearEpilogueKernel is a level-2 GEMM's tail in place, launched with (y, bias, int64 rows*n,
	// int32 n, int32 mode, float32 s0, float32 s1) on any 1D grid: mode EpilogueMode(op).
	LinearEpilogueKernel = "kb_linear_epilogue"
	// SplitTransposedKernel is lesson 08's fp16 split of an operand stored transposed, launched with
	// (xt, hi, lo, int32 rows, int32 cols, int32 rowsOut, int32 colsOut), grid (ceil(colsOut/32),
	// ceil(rowsOut/32)), block (32, 8).
	SplitTransposedKernel = "kb_split_halves_t"
	// SplitLoScale is split_transposed.cu's factor of the low halves (it must be lesson 08's).
	SplitLoScale = 2048
)

// GEMVThreads is kb_gemv's block size.
const GEMVThreads = 256

// GEMV is the source of kb_gemv (gemv.cu).
func GEMV() compile.Source { return compile.Source{Name: "kernelbench_gemv.cu", Code: gemvSrc} }

// Transpose is the source of kb_transpose (transpose.cu).
func Transpose() compile.Source {
	return compile.Source{Name: "kernelbench_transpose.cu", Code: transposeSrc}
}

// LinearEpilogue is the source of kb_linear_epilogue (linear_epilogue.cu).
func LinearEpilogue() compile.Source {
	return compile.Source{Name: "kernelbench_linear_epilogue.cu", Code: linearEpilogueSrc}
}

// SplitTransposed is the source of kb_split_halves_t (split_transposed.cu).
func SplitTransposed() compile.Source {
	return compile.Source{Name: "kernelbench_split_transposed.cu", Code: splitTransposedSrc}
}

// EpilogueMode is linear_epilogue.cu's mode of a level-2 GEMM, and whether op has one.
func EpilogueMode(op Op) (int, bool) {
	m, ok := map[Op]int{GemmMulLeakyReLU: 0, GemmReLUDivide: 1, GemmAddReLU: 2}[op]
	return m, ok
}

// Epilogue is a level-2 GEMM's tail on one float64 output v of column j, as its file computes it
// after nn.Linear (the float64 references apply it): bias is the layer's bias or the extra one.
func (p Problem) Epilogue(v, bias float64) float64 {
	switch p.Op {
	case GemmMulLeakyReLU:
		v = (v + bias) * p.Args["multiplier"]
		if v < 0 {
			v *= p.Args["negative_slope"]
		}
		return v
	case GemmReLUDivide:
		return max(v+bias, 0) / p.Args["divisor"]
	case GemmAddReLU:
		return max(v+bias, 0)
	}
	return v
}

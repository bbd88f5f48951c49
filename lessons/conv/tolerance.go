package conv

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/check"
)

// The steps' number formats (a record's DType).
const (
	F32  = "float32" // CUDA-core float32 products and sums
	TF32 = "tf32"    // float32 data, inputs rounded to TF32 on the tensor cores, float32 sums
	FP16 = "fp16"    // float32 data, inputs rounded to half on the tensor cores, float32 sums
)

// uIn is the unit roundoff of a format's inputs: TF32 and half both keep 11 significant bits.
func uIn(dtype string) float64 {
	if dtype == TF32 || dtype == FP16 {
		return 0x1p-11
	}
	return 0
}

// RoundingSigma is the standard deviation of an output's error from rounding the inputs to the
// step's format, for the lesson's inputs (x uniform in [-1, 1), w uniform in [-a, a) with
// a = 1/sqrt(taps)): each product x*w carries a relative error from each of its two inputs,
// uniform in (-u, u), so a variance of E[(xw)^2] * 2u^2/3 = (a^2/9)(2u^2/3); over the taps terms
// that is u * sqrt(2/27), whatever the depth. Zero for float32 (whose error is the sums' rounding,
// far below FP32's bounds at these depths).
func RoundingSigma(dtype string) float64 { return uIn(dtype) * math.Sqrt(2.0/27) }

// Tol is the check of a step of dtype: the suite's tolerance of the format (helpers/check), with
// its absolute element bound raised to ten standard deviations of RoundingSigma where that is
// larger. Outputs of order 1/3 that cancel to near zero keep their rounding error (it scales with
// the terms, not with the result), so a fixed absolute bound of 1e-4 would fail correct FP16
// kernels on a few elements in millions; ten standard deviations (1.3e-3) leave no false failure
// (a Gaussian tail of 1e-23) and are still a small fraction of a typical output, so a missing tap,
// a shifted window or a wrong channel shows up far above it, in the relative L2 bound first.
func Tol(dtype string) check.Tolerance {
	var t check.Tolerance
	switch dtype {
	case TF32:
		t = check.TF32
	case FP16:
		t = check.FP16
	default:
		return check.FP32
	}
	if a := 10 * RoundingSigma(dtype); a > t.Abs {
		t.Abs = a
		t.Why += fmt.Sprintf("; absolute term raised to 10 standard deviations of the input rounding for the lesson's inputs (%.1e)", a)
	}
	return t
}

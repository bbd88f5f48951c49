package matmul

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/check"
)

// Unit roundoffs of the formats the steps use (half an ulp at 1, relative).
const (
	uFP32 = 0x1p-24 // float32: 24-bit significand
	uTF32 = 0x1p-11 // TF32 and fp16: 11-bit significands
	uBF16 = 0x1p-8  // bfloat16: 8-bit significand
)

// inputRoundoff is the relative error left in each input by a step's number format: none for
// float32, one rounding for TF32 or fp16, and for a hi + lo split the rounding of lo (relative to
// x, about u_hi * u_lo, doubled for safety).
func inputRoundoff(dtype string) float64 {
	switch dtype {
	case "tf32", "fp16":
		return uTF32
	case "bf16":
		return uBF16
	case "3xtf32", "fp16x3":
		return 2 * uTF32 * uTF32
	case "bf16x3":
		return 2 * uBF16 * uBF16
	}
	return 0
}

// accRoundoff is the error of one addition into the float32 accumulator: a rounding (half an ulp)
// on the CUDA cores, a truncation (up to one ulp) on the tensor cores.
func accRoundoff(dtype string) float64 {
	if dtype == "float32" {
		return uFP32
	}
	return 2 * uFP32
}

// ErrorModel is the expected absolute error (one standard deviation) of an output element, and its
// expected relative L2 error, for a step of dtype on K-term dot products of inputs uniform in
// [-1, 1) (the lesson's). Two terms add up:
//
//   - input rounding: each product a*b carries a relative error e ~ uniform(-u, u) from each of its
//     two inputs, so a variance of E[(ab)^2] * 2u^2/3 = (1/9)(2u^2/3) per term, K terms: u*sqrt(2K/27);
//   - accumulation: the k-th addition errs by up to u_acc times the partial sum, whose variance is
//     k/9; summed over k (sequential order, the longest chain any step uses): u_acc * K / sqrt(54).
//
// An output element itself has standard deviation sqrt(K/9), which makes the relative L2 error.
func ErrorModel(dtype string, K int) (abs, relL2 float64) {
	k := float64(K)
	abs = inputRoundoff(dtype)*math.Sqrt(2*k/27) + accRoundoff(dtype)*k/math.Sqrt(54)
	return abs, abs / math.Sqrt(k/9)
}

// Tolerance is the check of a step of dtype on K-term dot products: the suite's tolerance of the
// precision (helpers/check), whose relative L2 bound and relative element bound hold here, with its
// absolute element bound raised to ten standard deviations of ErrorModel where that is larger.
//
// Why the absolute term must grow with K: with signed inputs, some outputs of a long dot product
// cancel to near zero while their rounding error does not shrink with them (it scales with the
// partial sums, not with the result). check.FP32's Abs of 1e-5 is derived for sums of ~1000 terms;
// at K = 4096 one standard deviation of the float32 error is 3.3e-5, so the bound would fail correct
// kernels on the few elements that cancel. Ten standard deviations leave no false failure in 16M
// outputs (a Gaussian tail of 1e-23) and are still 2e-4 of a typical output (|c| ~ 21 at K = 4096):
// a missing term, a wrong index or half-precision inputs show up far above it, in the relative L2
// bound first.
func Tolerance(dtype string, K int) check.Tolerance {
	var base check.Tolerance
	switch dtype {
	case "float32":
		base = check.FP32
	case "tf32":
		base = check.TF32
	case "3xtf32", "fp16x3", "bf16x3":
		base = check.TensorCoreFP32
	case "fp16", "bf16":
		base = check.FP16
	default:
		base = check.FP32
	}
	abs, _ := ErrorModel(dtype, K)
	if 10*abs > base.Abs {
		base.Abs = 10 * abs
		base.Why += fmt.Sprintf("; absolute term raised to 10 standard deviations of the rounding model for K = %d signed terms (%.1e)", K, base.Abs)
	}
	return base
}

// ElementBound is the rounding model's worst case for one output element of a step of dtype on
// K-term dot products, relative to sum_j |a_ij b_jk|, for inputs of any magnitude (the
// statistical Tolerance assumes inputs in [-1, 1)): each product carries the input rounding of
// both factors (2 inputRoundoff), and the sum at most K roundings of the accumulator (accRoundoff
// each, the last one being the output's own rounding to float32), to first order.
func ElementBound(dtype string, K int) float64 {
	return 2*inputRoundoff(dtype) + float64(K)*accRoundoff(dtype)
}

// ElementTol is ElementBound's absolute error for an element whose products' absolute values sum
// to mag: ElementBound(dtype, K) mag, and check.Eta32 for each of the K products and the result
// that fall among float32's subnormals (check.SumBound).
func ElementTol(dtype string, K int, mag float64) float64 {
	return check.SumBound(ElementBound(dtype, K), 1, mag, K)
}

// CompareBound checks got, the m x n product of a (m x k) and b (k x n), element by element against
// the float64 product under the rules of check.JudgeElement (IEEE's Inf and NaN on the float64
// product; ±Inf or NaN where the exact product overflows float32; elsewhere within
// ElementTol(dtype, k, sum_j |a_ij b_jk|) of the float64 product, a non-finite value accepted only
// where sum_j |a_ij b_jk| passes float32's largest). It returns the number of elements that fail
// and a description of the first.
func CompareBound(s Shape, a, b, got []float32, dtype string) (bad int, first string) {
	for i := range s.M {
		for j := range s.N {
			want, mag := 0.0, 0.0
			for l := range s.K {
				p := float64(a[i*s.K+l]) * float64(b[l*s.N+j])
				want += p
				mag += math.Abs(float64(a[i*s.K+l])) * math.Abs(float64(b[l*s.N+j]))
			}
			g := got[i*s.N+j]
			if v := check.JudgeElement(g, want, mag, ElementTol(dtype, s.K, mag)); v != check.ElemOK && v != check.ElemOverflowOK {
				if bad == 0 {
					first = fmt.Sprintf("C[%d][%d] = %g, want %g (bound %.2g x sum |a b| = %.3g)", i, j, g, want, ElementBound(dtype, s.K), mag)
				}
				bad++
			}
		}
	}
	return bad, first
}

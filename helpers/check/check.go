// Package check compares a GPU result with a float64 CPU reference.
//
// A result passes when it has no NaN or Inf where the reference is finite, its relative L2 error
// (||got-want|| / ||want||) is within Tolerance.RelL2, and every element is within
// Abs + Rel*|want| of the reference (the allclose rule). Both the norm and the element rule are
// needed: a norm alone lets a few wrong elements hide among millions, and an element rule alone with
// a loose absolute tolerance passes an all-zero output for tiny values (KernelBench's softmax lesson).
package check

import (
	"fmt"
	"math"
)

// Tolerance is how far a result may be from the float64 reference, with the reason for the bound.
type Tolerance struct {
	Name  string  `json:"name"`
	RelL2 float64 `json:"rel_l2"`
	Rel   float64 `json:"rel"`
	Abs   float64 `json:"abs"`
	Why   string  `json:"why"`
}

// The tolerances of the suite, one per precision. They are bounds on rounding error, never widened
// to let a kernel pass.
var (
	// FP32 holds for float32 kernels that accumulate up to a few thousand terms (unit roundoff
	// 6e-8, error growing about with the square root of the terms for random signs, linearly worst case).
	FP32 = Tolerance{Name: "fp32", RelL2: 1e-5, Rel: 1e-4, Abs: 1e-5,
		Why: "float32: unit roundoff 6e-8; sums of up to ~1000 terms stay within 1e-5 relative"}
	// FP32Exact is for float32 kernels that do one rounding per element (elementwise products,
	// sums of two, copies): the result must be the correctly rounded float32 of the float64 value,
	// at most half an ulp away, 2^-24 = 5.96e-8 relative (for normal numbers; Abs covers subnormals).
	FP32Exact = Tolerance{Name: "fp32-elementwise", RelL2: 6e-8, Rel: 6e-8, Abs: 1e-45,
		Why: "one float32 rounding per element: at most half an ulp, 2^-24 relative"}
	// FP16Exact is the same for half: one rounding to binary16, at most 2^-11 = 4.88e-4 relative,
	// and half of the smallest subnormal (2^-25) absolute below the normal range.
	FP16Exact = Tolerance{Name: "fp16-elementwise", RelL2: 4.9e-4, Rel: 4.9e-4, Abs: 3e-8,
		Why: "one half rounding per element: at most half an ulp, 2^-11 relative, 2^-25 absolute for subnormals"}
	// FP16 is for kernels that store half and round once or a few times per element.
	FP16 = Tolerance{Name: "fp16", RelL2: 1e-3, Rel: 2e-3, Abs: 1e-4,
		Why: "half: unit roundoff 4.9e-4; one or two roundings per element"}
	// BF16 is for kernels that store bfloat16 (8 significant bits) and round once or twice per
	// element from float arithmetic.
	BF16 = Tolerance{Name: "bf16", RelL2: 8e-3, Rel: 1.6e-2, Abs: 1e-3,
		Why: "bfloat16: unit roundoff 2^-8 = 3.9e-3; one or two roundings per element"}
	// TF32 is for float32 data multiplied on TF32 tensor cores (10-bit mantissa inputs, float32
	// accumulation) over up to a few thousand terms.
	TF32 = Tolerance{Name: "tf32", RelL2: 2e-3, Rel: 2e-2, Abs: 1e-3,
		Why: "tf32 inputs: 10-bit mantissa, rounding 4.9e-4 relative per input; float32 accumulation"}
	// TensorCoreFP32 is for float32 data on tensor cores with every input split into a TF32 high
	// and low part (3xTF32): the products are then float32-accurate, but the tensor core adds them
	// in float32 with truncation instead of rounding, so for same-sign terms the error grows about
	// linearly with their number: n x 2^-23, 1.2e-4 for the 1024 terms of the longest sweep. Measured on an H100 for
	// the RWKV forward (768 positive terms): 1.0e-5, against 3.6e-7 on CUDA cores and 1.6e-5 for
	// plain TF32 inputs.
	TensorCoreFP32 = Tolerance{Name: "3xtf32", RelL2: 1.25e-4, Rel: 2.5e-4, Abs: 1e-4,
		Why: "3xTF32: float32-accurate products, tensor-core float32 accumulation truncates: n x 2^-23 for up to n = 1024 same-sign terms"}
	// FP64 is for float64 kernels and the references themselves.
	FP64 = Tolerance{Name: "fp64", RelL2: 1e-12, Rel: 1e-10, Abs: 1e-12,
		Why: "float64: unit roundoff 1.1e-16"}
)

// Result is the outcome of a comparison.
type Result struct {
	N         int       `json:"n"`
	RelL2     float64   `json:"rel_l2"`
	MaxAbs    float64   `json:"max_abs"`
	NonFinite int       `json:"non_finite"` // NaN or Inf where the reference is finite: unwritten or overflowed elements
	Bad       int       `json:"bad"`        // elements outside Abs + Rel*|want|
	FirstBad  int       `json:"first_bad"`  // index of the first bad or non-finite element, -1 if none
	Tol       Tolerance `json:"tolerance"`
	OK        bool      `json:"ok"`
}

// Compare checks got against want under tol.
func Compare(got, want []float64, tol Tolerance) Result {
	r := Result{N: len(want), FirstBad: -1, Tol: tol}
	if len(got) != len(want) {
		r.Bad = max(len(got), len(want))
		r.FirstBad = min(len(got), len(want))
		r.RelL2 = math.Inf(1)
		return r
	}
	var num, den float64
	for i, w := range want {
		g := got[i]
		if math.IsNaN(g) || math.IsInf(g, 0) {
			if !(math.IsNaN(w) || math.IsInf(w, 0)) || !(math.IsNaN(g) == math.IsNaN(w)) {
				r.NonFinite++
				if r.FirstBad < 0 {
					r.FirstBad = i
				}
			}
			continue
		}
		d := math.Abs(g - w)
		num += d * d
		den += w * w
		r.MaxAbs = math.Max(r.MaxAbs, d)
		if d > tol.Abs+tol.Rel*math.Abs(w) {
			r.Bad++
			if r.FirstBad < 0 {
				r.FirstBad = i
			}
		}
	}
	switch {
	case r.NonFinite > 0 && num == 0:
		r.RelL2 = math.NaN() // nothing finite to measure: not "no error"
	case den > 0:
		r.RelL2 = math.Sqrt(num / den)
	case num > 0:
		r.RelL2 = math.Inf(1)
	}
	r.OK = r.NonFinite == 0 && r.Bad == 0 && r.RelL2 <= tol.RelL2
	return r
}

// Err is nil when r passed and otherwise says what failed and where.
func (r Result) Err() error {
	if r.OK {
		return nil
	}
	switch {
	case r.NonFinite > 0:
		return fmt.Errorf("%d of %d elements are NaN or Inf (first at %d): unwritten outputs stay NaN-poisoned", r.NonFinite, r.N, r.FirstBad)
	case r.Bad > 0:
		return fmt.Errorf("%d of %d elements outside %s tolerance (abs %.1e + rel %.1e), first at %d; max abs error %.3g, rel L2 %.3g",
			r.Bad, r.N, r.Tol.Name, r.Tol.Abs, r.Tol.Rel, r.FirstBad, r.MaxAbs, r.RelL2)
	}
	return fmt.Errorf("relative L2 error %.3g over the %s bound %.1e", r.RelL2, r.Tol.Name, r.Tol.RelL2)
}

// String summarises the comparison in one line.
func (r Result) String() string {
	verdict := "PASS"
	if !r.OK {
		verdict = "FAIL"
	}
	return fmt.Sprintf("%s  rel L2 %.2e  max abs %.2e  (%s: rel L2 <= %.0e)", verdict, r.RelL2, r.MaxAbs, r.Tol.Name, r.Tol.RelL2)
}

// Float64s converts a slice of any real type to float64.
func Float64s[T ~float32 | ~float64 | ~int32 | ~int64](xs []T) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

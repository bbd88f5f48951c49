// Package check compares a GPU result with a float64 CPU reference.
//
// A result passes when it has no NaN or Inf where the reference is finite and a NaN or Inf
// wherever the reference has one, its relative L2 error (||got-want|| / ||want||) is within
// Tolerance.RelL2, and every element is within
// Abs + Rel*|want| of the reference (the allclose rule). Both the norm and the element rule are
// needed: a norm alone lets a few wrong elements hide among millions, and an element rule alone with
// a loose absolute tolerance passes an all-zero output for tiny values (KernelBench's softmax lesson).
//
// Tiny and zero references. A relative error means nothing where the reference is (nearly) zero: a
// correct float32 kernel still carries the rounding of the terms it combined, which does not shrink
// when they cancel. A tolerance judges such elements by its Floor, an absolute error derived from the
// magnitudes of the computation (the unit roundoff of the format, how many terms are combined and
// their size: see SumFloor), never chosen to let a kernel pass. With a Floor sigma > 0 an element may
// be 10 sigma + Rel*|want| off, and the L2 rule becomes ||got-want|| <= RelL2*||want|| + 3 sigma
// sqrt(N): the error's RMS may reach three standard deviations of the rounding model whatever the
// reference. A tolerance without a Floor judges only relatively (and by Abs), as before. An all-zero
// output still fails wherever the reference's RMS is above 3 sigma: a Floor must stay far below the
// outputs' typical size, which the lessons' tests check on their zeros demonstrations.
//
// Element bounds. For inputs of any magnitude, where a statistical tolerance derived near 1 does not
// hold, JudgeElement and CompareBounds judge each element against the rounding model's worst case
// for the terms it sums (SumBound: a constant times the sum of their absolute values), with IEEE's
// Inf and NaN on the float64 reference.
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
	// Floor is one standard deviation of the absolute rounding error any element may carry whatever
	// its reference (0: none; see the package doc and SumFloor).
	Floor float64 `json:"floor,omitempty"`
	Why   string  `json:"why"`
}

// SumFloor is one standard deviation of the rounding error of a float sum of n terms of RMS size
// term, in a format of unit roundoff u (float32: 2^-24), for terms of both signs: the k-th addition
// errs by up to u times the partial sum, whose RMS is about sqrt(k) term, so the errors add up to
// u * term * sqrt(sum k / 3) = u * term * n / sqrt(6). That is the sequential order, the longest chain
// a kernel can take (a tree is shorter); the model is lesson 03's for K-term dot products.
func SumFloor(u float64, n int, term float64) float64 {
	return u * term * float64(max(n, 1)) / math.Sqrt(6)
}

// U32 is float32's unit roundoff, 2^-24.
const U32 = 0x1p-24

// WithFloor is t with the absolute floor sigma (one standard deviation of the rounding error, from
// SumFloor or an equal derivation) for tiny or zero references; how it was derived goes into Name
// and Why. Abs is raised to 10 sigma where that is larger.
func (t Tolerance) WithFloor(sigma float64, how string) Tolerance {
	if sigma <= 0 {
		return t
	}
	t.Floor = sigma
	t.Abs = math.Max(t.Abs, 10*sigma)
	t.Name += fmt.Sprintf(" + floor %.1e", sigma)
	t.Why += fmt.Sprintf("; tiny or zero references judged by an absolute floor sigma = %.2g (%s): each element within 10 sigma, the RMS error within 3 sigma", sigma, how)
	return t
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
	RMS       float64   `json:"rms,omitempty"` // RMS of the finite errors, judged against 3 Floor when the tolerance has one
	MaxAbs    float64   `json:"max_abs"`
	NonFinite int       `json:"non_finite"` // NaN or Inf where the reference is finite: unwritten or overflowed elements
	Bad       int       `json:"bad"`        // elements outside Abs + Rel*|want|, or finite where the reference is NaN or Inf
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
		if math.IsNaN(w) || math.IsInf(w, 0) { // a finite result where the reference is not: out of any bound
			r.Bad++
			if r.FirstBad < 0 {
				r.FirstBad = i
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
	normOK := r.RelL2 <= tol.RelL2
	if tol.Floor > 0 && len(want) > 0 {
		r.RMS = math.Sqrt(num / float64(len(want)))
		normOK = math.Sqrt(num) <= tol.RelL2*math.Sqrt(den)+3*tol.Floor*math.Sqrt(float64(len(want)))
	}
	r.OK = r.NonFinite == 0 && r.Bad == 0 && normOK
	return r
}

// Err is nil when r passed and otherwise says what failed and where.
func (r Result) Err() error {
	if r.OK {
		return nil
	}
	switch {
	case r.NonFinite > 0:
		return fmt.Errorf("%d of %d elements are NaN or Inf (first at %d): an unwritten output stays NaN-poisoned, or the kernel computed a non-finite value", r.NonFinite, r.N, r.FirstBad)
	case r.Bad > 0:
		return fmt.Errorf("%d of %d elements outside %s tolerance (abs %.1e + rel %.1e), first at %d; max abs error %.3g, rel L2 %.3g",
			r.Bad, r.N, r.Tol.Name, r.Tol.Abs, r.Tol.Rel, r.FirstBad, r.MaxAbs, r.RelL2)
	}
	if r.Tol.Floor > 0 {
		return fmt.Errorf("relative L2 error %.3g and RMS error %.3g: over the %s bound (rel L2 %.1e + an RMS of 3 x floor %.1e)", r.RelL2, r.RMS, r.Tol.Name, r.Tol.RelL2, r.Tol.Floor)
	}
	return fmt.Errorf("relative L2 error %.3g over the %s bound %.1e", r.RelL2, r.Tol.Name, r.Tol.RelL2)
}

// String summarises the comparison in one line.
func (r Result) String() string {
	verdict := "PASS"
	if !r.OK {
		verdict = "FAIL"
	}
	if r.Tol.Floor > 0 {
		return fmt.Sprintf("%s  rel L2 %.2e  RMS %.2e  max abs %.2e  (%s: rel L2 <= %.0e + RMS 3 x %.1e)", verdict, r.RelL2, r.RMS, r.MaxAbs, r.Tol.Name, r.Tol.RelL2, r.Tol.Floor)
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

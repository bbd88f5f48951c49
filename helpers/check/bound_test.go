package check

import (
	"math"
	"testing"
)

var (
	inf32  = float32(math.Inf(1))
	ninf32 = float32(math.Inf(-1))
	nan32  = float32(math.NaN())
)

// Each rule of JudgeElement, with a value that must pass and one that must fail.
func TestJudgeElementRules(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		rule           string
		got            float32
		want, mag, bnd float64
		verdict        int
	}{
		{"R2: NaN reference, NaN", nan32, nan, nan, nan, ElemOK},
		{"R2: NaN reference, a number", 0, nan, nan, nan, ElemNaNMissing},
		{"R2: NaN reference, Inf", inf32, nan, nan, nan, ElemNaNMissing},
		{"Inf reference, the same Inf", ninf32, -inf, inf, inf, ElemOK},
		{"Inf reference, NaN", nan32, -inf, inf, inf, ElemInfWrong},
		{"Inf reference, the other Inf", inf32, -inf, inf, inf, ElemInfWrong},
		{"R3: overflowing exact value, its Inf", ninf32, -1e39, 1e39, 1e32, ElemOK},
		{"R3: overflowing exact value, NaN", nan32, -1e39, 1e39, 1e32, ElemOK},
		{"R3: overflowing exact value, the other Inf (an accumulation that overflowed first the other way)", inf32, -1e39, 1e39, 1e32, ElemOverflowOK},
		{"R3: overflowing exact value, the other Inf, terms within range (impossible for a sum; still wrong)", inf32, -1e39, 1e38, 1e32, ElemInfWrong},
		{"R3: overflowing exact value, float32's largest", -math.MaxFloat32, -1e39, 1e39, 1e32, ElemInfWrong},
		{"R4: within the bound", 1.5, 1, 1e8, 0.6, ElemOK},
		{"R4: past the bound", 1.7, 1, 1e8, 0.6, ElemOutOfBound},
		{"R4: Inf where nothing can overflow", inf32, 1, 1e8, 0.6, ElemNonFinite},
		{"R4: NaN where nothing can overflow", nan32, 1, 1e8, 0.6, ElemNonFinite},
		{"R4: Inf where the terms pass float32's largest", inf32, 1, 1e39, 1e32, ElemOverflowOK},
		{"R4: NaN where the terms pass float32's largest", nan32, 1, 1e39, 1e32, ElemOverflowOK},
		{"R4: the exact value where the terms pass float32's largest", 1, 1, 1e39, 1e32, ElemOK},
		{"R4: a subnormal within Eta32", 0, 0x1p-150, 0x1p-150, Eta32, ElemOK},
		{"R4: a subnormal past its bound", 0x1p-148, 0, 0x1p-150, Eta32, ElemOutOfBound},
	} {
		if v := JudgeElement(c.got, c.want, c.mag, c.bnd); v != c.verdict {
			t.Errorf("%s: verdict %d, want %d", c.rule, v, c.verdict)
		}
	}
}

// CompareBounds counts each kind of failure, says where the first is, and accepts an overflow
// only where the terms pass float32's largest.
func TestCompareBounds(t *testing.T) {
	want := []float64{1, math.NaN(), 1e39, 2, 3}
	mag := []float64{2, math.NaN(), 1e39, 1e39, 3}
	bound := []float64{0.1, math.NaN(), 1, 1, 0.1}
	r := CompareBounds([]float32{1.05, nan32, inf32, nan32, 3}, want, mag, bound)
	if !r.OK || r.Overflowed != 1 || r.Err() != nil {
		t.Errorf("right values: %+v (%v)", r, r.Err())
	}
	r = CompareBounds([]float32{1.2, 0, math.MaxFloat32, nan32, inf32}, want, mag, bound)
	if r.OK || r.Bad != 1 || r.NaNMissing != 1 || r.InfWrong != 1 || r.NonFinite != 1 || r.FirstBad != 0 || r.Err() == nil {
		t.Errorf("four wrong values: %+v", r)
	}
	if r := CompareBounds([]float32{1}, want, mag, bound); r.OK {
		t.Errorf("a short result passed")
	}
}

// SumBound is c u mag plus Eta32 per product and for the result: a float32 dot product computed
// in order on the host stays within it for every scale, and a result one bound further does not.
func TestSumBoundHoldsForFloat32Sums(t *testing.T) {
	for _, scale := range []float64{0x1p-75, 1e-30, 1, 1e15} {
		const n = 1000
		a, b := make([]float32, n), make([]float32, n)
		x := uint64(12345)
		next := func() float64 { // a small LCG: values in [-1, 1)
			x = x*6364136223846793005 + 1442695040888963407
			return float64(x>>11)/float64(1<<53)*2 - 1
		}
		for i := range a {
			a[i], b[i] = float32(next()*scale), float32(next())
		}
		var got float32
		var want, mag float64
		for i := range a {
			got += a[i] * b[i]
			want += float64(a[i]) * float64(b[i])
			mag += math.Abs(float64(a[i]) * float64(b[i]))
		}
		bnd := SumBound(n, U32, mag, n)
		if v := JudgeElement(got, want, mag, bnd); v != ElemOK {
			t.Errorf("scale %g: a float32 sum %g of exact %g fails its bound %g", scale, got, want, bnd)
		}
		if v := JudgeElement(float32(want+2*bnd), want, mag, bnd); v != ElemOutOfBound {
			t.Errorf("scale %g: twice the bound off passes", scale)
		}
	}
}

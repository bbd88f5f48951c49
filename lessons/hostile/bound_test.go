package hostile

import (
	"math"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/lessons/trilinear"
)

// cornerWeight32 is lesson 07's corner_weight (kernels/trilinear) in float32, operation by
// operation: clamp, (p + 1) * 0.5, 1 - u, then the three factors' product.
func cornerWeight32(p []float32, k int) float32 {
	clamp := func(x float32) float32 { return max(-1, min(1, x)) }
	var f [3]float32
	for i, bit := range []int{k >> 2 & 1, k >> 1 & 1, k & 1} {
		sum := clamp(p[i]) + 1 // one rounding
		u := sum * 0.5         // exact
		if bit == 1 {
			f[i] = u
		} else {
			f[i] = 1 - u // one rounding
		}
	}
	prod := f[0] * f[1]
	return prod * f[2]
}

// The kernels' dfeats, W_k in float32 times g, is within featsBound everywhere, including the
// points near +-1 where 1 - u cancels and a weight of 1e-6 carries a relative error of 3%: the
// row-relative tolerance the harness used before failed it there (the log's dfeats failures), the
// element bound does not. A corner swapped, or a weight 1% off, still fails.
func TestTrilinearFeatsBound(t *testing.T) {
	s := trilinear.Shape{N: 4000, F: 4}
	r := rng(7)
	points := make([]float32, 3*s.N)
	for i := range points {
		switch i % 4 {
		case 0: // near +1 or -1, where 1 - u or u cancels to a few ulps
			points[i] = float32(math.Copysign(1-math.Abs(r.NormFloat64())*1e-6, r.NormFloat64()))
		default:
			points[i] = float32(2.4*r.Float64() - 1.2)
		}
	}
	g := Dists[0].Draw(s.N*s.F, s.F, 8)
	kernel := func(swap int, scale float32) []float32 {
		out := make([]float32, 0, 8*s.N*s.F)
		for n := 0; n < s.N; n++ {
			for k := 0; k < 8; k++ {
				w := cornerWeight32(points[3*n:3*n+3], k^swap) * scale
				for f := 0; f < s.F; f++ {
					out = append(out, w*g[n*s.F+f])
				}
			}
		}
		return out
	}
	p64, g64 := check.Float64s(points), check.Float64s(g)
	out := dfeats(s, p64, g64)
	boundJudges(t, out, "row-relative", kernel)
}

// With both operands at 1e30 the exact products overflow float32, and a float32 dot product that
// fuses each multiply into its addition (FMA, as nvcc compiles the kernels' a * b + acc) keeps the
// sign of the first product that overflows: acc = fma(a, b, +Inf) is +Inf for any finite a b. Where
// the exact sum has the other sign, the result is the infinity of the other sign: no float32 value
// is right there, and the rules (R3) take any non-finite value where the terms overflow, as the
// matmul, conv and RWKV cases at 1e30 need, and never a finite one.
func TestFMAKeepsTheFirstOverflow(t *testing.T) {
	r := rng(3)
	other, n := 0, 0
	for e := 0; e < 2000; e++ {
		var acc float32
		var exact, mag float64
		for k := 0; k < 4; k++ {
			a, b := float32(r.NormFloat64()*1e30), float32(r.NormFloat64()*1e30)
			acc = float32(math.FMA(float64(a), float64(b), float64(acc)))
			exact += float64(a) * float64(b)
			mag += math.Abs(float64(a) * float64(b))
		}
		n++
		if math.IsInf(float64(acc), 0) && math.Signbit(float64(acc)) != math.Signbit(exact) {
			other++
			if v := check.JudgeElement(acc, exact, mag, 0); v != check.ElemOverflowOK {
				t.Errorf("%g for the exact %g (terms %g): verdict %d, want an accepted overflow", acc, exact, mag, v)
			}
		}
		if v := check.JudgeElement(math.MaxFloat32, exact, mag, 0); math.Abs(exact) > math.MaxFloat32 && v != check.ElemInfWrong {
			t.Errorf("float32's largest for the exact %g passes (verdict %d)", exact, v)
		}
	}
	if other == 0 {
		t.Errorf("no infinity of the other sign in %d FMA sums of 4 products at 1e30: the test no longer shows why R3 takes one", n)
	}
	t.Logf("%d of %d four-term FMA sums at 1e30 end as the infinity of the other sign", other, n)
}

// The kernels' out, float32 weights summed against feats by fused multiply-adds, is within
// outBound on constant rows whose corners cancel (feats of +c on some corners and -c on others:
// out is far smaller than its terms), where the elementwise tolerance on out (the recorded run's
// two trilinear failures on "constant rows") fails it. A corner swapped, or a weight 1% off,
// still fails.
func TestTrilinearOutBound(t *testing.T) {
	s := trilinear.Shape{N: 2000, F: 4}
	r := rng(11)
	points := make([]float32, 3*s.N)
	for i := range points {
		points[i] = float32(2.4*r.Float64() - 1.2)
	}
	feats := make([]float32, 8*s.N*s.F)
	for n := 0; n < s.N; n++ {
		c := float32(math.Exp(20*r.Float64() - 10)) // one constant per point, from 4.5e-5 to 2.2e4
		for k := 0; k < 8; k++ {
			v := c
			if (k^n)&1 == 1 {
				v = -c
			}
			for f := 0; f < s.F; f++ {
				feats[(n*8+k)*s.F+f] = v
			}
		}
	}
	kernel := func(swap int, scale float32) []float32 {
		out := make([]float32, s.N*s.F)
		for n := 0; n < s.N; n++ {
			for f := 0; f < s.F; f++ {
				var o float32
				for k := 0; k < 8; k++ {
					w := cornerWeight32(points[3*n:3*n+3], k^swap) * scale
					o = float32(math.FMA(float64(w), float64(feats[(n*8+k)*s.F+f]), float64(o)))
				}
				out[n*s.F+f] = o
			}
		}
		return out
	}
	p64, f64 := check.Float64s(points), check.Float64s(feats)
	out := outRef(s, f64, p64)
	boundJudges(t, out, "elementwise", kernel)
}

// boundJudges checks an output judged by its element bound (out, with the float64 reference in
// Want): the kernels' own float32 arithmetic (kernel(0, 1)) passes it; its tolerance (Tol) applied
// alone, without the bound, passes the cancelling corners too (which is why the output needs its bound); and
// the bound fails corners k and k^1 swapped and every weight 1% off.
func boundJudges(t *testing.T, out Output, tolKind string, kernel func(swap int, scale float32) []float32) {
	t.Helper()
	out.Got = kernel(0, 1)
	if j := JudgeOutput(out, nil); !j.OK {
		t.Fatalf("the kernels' float32 %s fails its element bound: %s", out.Name, j.Why)
	}
	old := Output{Name: out.Name, Got: out.Got, Want: out.Want, Tol: out.Tol, Cols: out.Cols}
	if j := JudgeOutput(old, nil); j.OK {
		t.Errorf("the %s tolerance passes the cancelling corners: the test no longer shows why %s needs its bound", tolKind, out.Name)
	}
	for _, c := range []struct {
		what  string
		swap  int
		scale float32
	}{{"corners k and k^1 swapped", 1, 1}, {"every weight 1% off", 0, 1.01}} {
		out.Got = kernel(c.swap, c.scale)
		if j := JudgeOutput(out, nil); j.OK {
			t.Errorf("%s: %s passes", out.Name, c.what)
		}
	}
}

package reduce

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// hostilePatterns name the rows hostileRows builds, row r taking pattern r % len(hostilePatterns).
var hostilePatterns = []string{
	"masked but the last", "masked but the first", "masked but three", "all -inf", "first half masked",
	"a +inf", "a NaN", "masked with a NaN", "near 1e30", "constant", "subnormal (near 2^-130)",
}

// hostileRows is rows x cols of softmax inputs in dtype d (rounded to it) that a model produces and
// the lesson's uniform inputs never do: attention masks (-inf everywhere but one, three or half of
// the entries, at the row's ends, so that whole blocks, cluster ranks and team slices of a long row
// see nothing but -inf), a row all -inf, +inf and NaN entries, magnitudes near 1e30 (Inf in half),
// a constant row, and subnormals.
func hostileRows(d DType, rows, cols int, seed uint64) []float32 {
	u := Uniform(F32, rows*cols, -4, 4, seed)
	x := make([]float32, rows*cols)
	ninf, inf, nan := float32(math.Inf(-1)), float32(math.Inf(1)), float32(math.NaN())
	for r := range rows {
		row, ur := x[r*cols:(r+1)*cols], u[r*cols:(r+1)*cols]
		copy(row, ur)
		switch hostilePatterns[r%len(hostilePatterns)] {
		case "masked but the last":
			fill(row[:cols-1], ninf)
		case "masked but the first":
			fill(row[1:], ninf)
		case "masked but three":
			fill(row, ninf)
			row[0], row[cols/2], row[cols-1] = ur[0], ur[cols/2], ur[cols-1]
		case "all -inf":
			fill(row, ninf)
		case "first half masked":
			fill(row[:cols/2], ninf)
		case "a +inf":
			row[cols/3] = inf
		case "a NaN":
			row[cols/2] = nan
		case "masked with a NaN":
			fill(row, ninf)
			row[0], row[cols-1] = 1, nan
		case "near 1e30":
			for i := range row {
				row[i] = ur[i] * 2.5e29
			}
		case "constant":
			fill(row, 3.5)
		case "subnormal (near 2^-130)":
			for i := range row {
				row[i] = ur[i] * 0x1p-132
			}
		}
	}
	for i, v := range x {
		x[i] = d.Round(v)
	}
	return x
}

func fill(x []float32, v float32) {
	for i := range x {
		x[i] = v
	}
}

// The float64 reference follows PyTorch on the hostile rows: exact where the row has a finite
// maximum and no NaN or +inf (masked entries exactly 0, the rest summing to 1), NaN everywhere for
// rows all -inf, with a +inf or with a NaN.
func TestSoftmaxRowHostile(t *testing.T) {
	cols := 9
	x := hostileRows(F32, len(hostilePatterns), cols, 5)
	for r, name := range hostilePatterns {
		y := SoftmaxRow(x[r*cols : (r+1)*cols])
		nanRow := name == "all -inf" || name == "a +inf" || name == "a NaN" || name == "masked with a NaN"
		sum, nans := 0.0, 0
		for i, v := range y {
			if math.IsNaN(v) {
				nans++
				continue
			}
			if math.IsInf(float64(x[r*cols+i]), -1) && v != 0 {
				t.Errorf("%s: masked entry %d gives %g, want 0", name, i, v)
			}
			sum += v
		}
		switch {
		case nanRow && nans != cols:
			t.Errorf("%s: %d of %d NaN, want all (PyTorch's)", name, nans, cols)
		case !nanRow && (nans != 0 || math.Abs(sum-1) > 1e-12):
			t.Errorf("%s: %d NaN, sum %g", name, nans, sum)
		}
	}
}

// lnScales are magnitudes over float32's whole range: up to 1e19 the layer norm kernels' fast path;
// from 1e20 the squared deviations overflow float32 and the samples take the slow path (a rescale
// by 2^-80). The GPU tests run the op on each.
var lnScales = []float32{1e-30, 1e-20, 1e-10, 1e-3, 1, 1e3, 1e10, 1e19, 1e20, 1e25, 1e30}

// The float64 layer norm and its backward, the GPU tests' references, hold over float32's whole
// range: finite at every scale of lnScales and at subnormals; scale-invariant where eps is
// negligible (x times 2^k, exact in float32, gives the same y and dx times 2^-k from 2^10 to 2^100);
// and at tiny scales, where var + eps is eps, y is the bias within |x - mean| w / sqrt(eps) (and
// the bias's rounding).
func TestLayerNormReferenceOverFloat32Range(t *testing.T) {
	const M = 1001
	base, w, b := Uniform(F32, M, -1, 1, 31), Uniform(F32, M, 0.5, 1.5, 32), Uniform(F32, M, -0.5, 0.5, 33)
	dy := Uniform(F32, M, -1, 1, 34)
	scaled := func(s float32) []float32 {
		x := make([]float32, M)
		for i, v := range base {
			x[i] = v * s
		}
		return x
	}
	finite := func(what string, v []float64) {
		t.Helper()
		if i := slices.IndexFunc(v, func(a float64) bool { return math.IsNaN(a) || math.IsInf(a, 0) }); i >= 0 {
			t.Errorf("%s: element %d is %g", what, i, v[i])
		}
	}
	for _, s := range append(lnScales, 0x1p-130) {
		x := scaled(s)
		y, _, _ := LayerNormSample(x, w, b, LNEps)
		dx, dw, db := LayerNormBackward(x, w, dy, 1, M, LNEps)
		for i, v := range [][]float64{y, dx, dw, db} {
			finite(fmt.Sprintf("x near %g: %s", s, []string{"y", "dx", "dweight", "dbias"}[i]), v)
		}
	}
	ref := scaled(0x1p10)
	yRef, _, _ := LayerNormSample(ref, w, b, LNEps)
	dxRef, dwRef, _ := LayerNormBackward(ref, w, dy, 1, M, LNEps)
	dxScale := 0.0 // the largest |dx| 2^10: dx's elements are compared against it (some cancel)
	for _, v := range dxRef {
		dxScale = math.Max(dxScale, math.Abs(math.Ldexp(v, 10)))
	}
	for _, k := range []int{40, 62, 66, 80, 100} {
		x := scaled(float32(math.Ldexp(1, k)))
		y, _, _ := LayerNormSample(x, w, b, LNEps)
		dx, dw, _ := LayerNormBackward(x, w, dy, 1, M, LNEps)
		for i := range y {
			// dx scales as 1/x: compare dx 2^k with the reference's dx 2^10
			if d := math.Abs(y[i] - yRef[i]); d > 1e-9*math.Max(1, math.Abs(yRef[i])) {
				t.Errorf("x times 2^%d: y[%d] = %.17g, at 2^10 %.17g", k, i, y[i], yRef[i])
				break
			}
			if d := math.Abs(math.Ldexp(dx[i], k) - math.Ldexp(dxRef[i], 10)); d > 1e-9*dxScale {
				t.Errorf("x times 2^%d: dx[%d] 2^%d = %.17g, at 2^10 %.17g", k, i, k, math.Ldexp(dx[i], k), math.Ldexp(dxRef[i], 10))
				break
			}
			if d := math.Abs(dw[i] - dwRef[i]); d > 1e-9*math.Max(1, math.Abs(dwRef[i])) {
				t.Errorf("x times 2^%d: dweight[%d] = %.17g, at 2^10 %.17g", k, i, dw[i], dwRef[i])
				break
			}
		}
	}
	for _, s := range []float32{1e-30, 1e-20, 0x1p-130} {
		x := scaled(s)
		y, mean, _ := LayerNormSample(x, w, b, LNEps)
		for i := range y {
			if d := math.Abs(y[i] - float64(b[i])); d > math.Abs(float64(x[i])-mean)*float64(w[i])/math.Sqrt(LNEps)*(1+1e-12)+math.Abs(float64(b[i]))*0x1p-52 {
				t.Errorf("x near %g: y[%d] = %g is %g from the bias", s, i, y[i], d)
				break
			}
		}
	}
}

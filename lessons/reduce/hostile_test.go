package reduce

import (
	"math"
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

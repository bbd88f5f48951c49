package hostile

import (
	"math"
	"slices"
	"testing"
)

func rms(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(len(x)))
}

func dist(t *testing.T, name string) Dist {
	t.Helper()
	d, ok := DistByName(name)
	if !ok {
		t.Fatalf("no distribution %q", name)
	}
	return d
}

// Each distribution draws the same values from the same seed, other values from another.
func TestDistsAreSeeded(t *testing.T) {
	for _, d := range Dists {
		a, b, c := d.Draw(4*50, 50, 7), d.Draw(4*50, 50, 7), d.Draw(4*50, 50, 8)
		same := func(x, y []float32) bool {
			return slices.EqualFunc(x, y, func(p, q float32) bool { return math.Float32bits(p) == math.Float32bits(q) })
		}
		if !same(a, b) {
			t.Errorf("%s: two draws from seed 7 differ", d.Name)
		}
		if same(a, c) {
			t.Errorf("%s: seeds 7 and 8 draw the same values", d.Name)
		}
	}
}

// The scales are what the names say, within float32, and the special values are where they
// should be.
func TestDistsShapes(t *testing.T) {
	const rows, cols = 14, 4000
	for _, c := range []struct {
		name  string
		scale float64
	}{{"normal 1", 1}, {"normal 1e-30", 1e-30}, {"normal 1e30", 1e30}, {"uniform 1e-30", 1e-30 / math.Sqrt(3)}, {"uniform 1e30", 1e30 / math.Sqrt(3)}, {"uniform 2^-30", 0x1p-30 / math.Sqrt(3)}, {"uniform 1e5", 1e5 / math.Sqrt(3)}} {
		x := dist(t, c.name).Draw(rows*cols, cols, 1)
		if r := rms(x) / c.scale; r < 0.95 || r > 1.05 {
			t.Errorf("%s: RMS %.3g, want %.3g", c.name, rms(x), c.scale)
		}
	}
	mixed := dist(t, "mixed row scales").Draw(rows*cols, cols, 1)
	for r := 0; r < rows; r++ {
		want := RowScales[r%len(RowScales)]
		if got := rms(mixed[r*cols:(r+1)*cols]) / want; got < 0.95 || got > 1.05 {
			t.Errorf("mixed row scales: row %d has RMS %.3g, want %.3g", r, rms(mixed[r*cols:(r+1)*cols]), want)
		}
	}
	den := dist(t, "denormals").Draw(rows*cols, cols, 1)
	nonzero := 0
	for _, v := range den {
		if math.Abs(float64(v)) >= 0x1p-126 {
			t.Fatalf("denormals: %g is a normal float32", v)
		}
		if v != 0 {
			nonzero++
		}
	}
	if nonzero < len(den)/2 {
		t.Errorf("denormals: only %d of %d are non-zero", nonzero, len(den))
	}
	con := dist(t, "constant rows").Draw(rows*cols, cols, 1)
	for r := 0; r < rows; r++ {
		for _, v := range con[r*cols : (r+1)*cols] {
			if v != con[r*cols] {
				t.Fatalf("constant rows: row %d holds %g and %g", r, con[r*cols], v)
			}
		}
	}
	if con[0] == con[cols] {
		t.Errorf("constant rows: rows 0 and 1 hold the same value")
	}
	special := dist(t, "inf and nan").Draw(rows*cols, cols, 1)
	for r := 0; r < rows; r++ {
		row := special[r*cols : (r+1)*cols]
		var pinf, ninf, nan int
		for _, v := range row {
			switch f := float64(v); {
			case math.IsInf(f, 1):
				pinf++
			case math.IsInf(f, -1):
				ninf++
			case math.IsNaN(f):
				nan++
			}
		}
		want := [3]int{}
		want[r%3] = 1
		if [3]int{pinf, ninf, nan} != want {
			t.Errorf("inf and nan: row %d has %d +inf, %d -inf, %d NaN", r, pinf, ninf, nan)
		}
	}
}

// The masked distribution masks row 0 but one element, row 1 entirely, and keeps at least one
// element of every other row; softmax-like ops alone take it.
func TestMasked(t *testing.T) {
	const rows, cols = 6, 257
	x := dist(t, "masked -inf").Draw(rows*cols, cols, 3)
	for r := 0; r < rows; r++ {
		finite := 0
		for _, v := range x[r*cols : (r+1)*cols] {
			if !math.IsInf(float64(v), -1) {
				finite++
			}
		}
		switch {
		case r == 0 && finite != 1:
			t.Errorf("row 0 has %d finite elements, want 1", finite)
		case r == 1 && finite != 0:
			t.Errorf("row 1 has %d finite elements, want 0", finite)
		case r > 1 && (finite < 1 || finite > cols*3/4):
			t.Errorf("row %d has %d finite elements, want about half", r, finite)
		}
	}
	soft, _ := OpByName("softmax")
	mm, _ := OpByName("matmul.Multiply")
	has := func(op *Op) bool {
		return slices.ContainsFunc(op.DistsFor(), func(d Dist) bool { return d.Masks })
	}
	if !has(soft) || has(mm) {
		t.Errorf("the masked distribution goes to softmax (%v) and not to matmul (%v)", has(soft), has(mm))
	}
}

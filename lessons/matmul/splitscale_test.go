package matmul

import (
	"math"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/half"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// binade is floor(log2 |v|) for normals and subnormals, and tells zeros and non-finite values apart.
func TestBinade(t *testing.T) {
	for _, c := range []struct {
		v          float32
		e          int
		nz, nonfin bool
	}{{1, 0, true, false}, {1.99, 0, true, false}, {-2, 1, true, false}, {0x1p-126, -126, true, false}, {0x1p-149, -149, true, false},
		{0x1.8p-140, -140, true, false}, {math.MaxFloat32, 127, true, false}, {0, 0, false, false}, {float32(math.Inf(-1)), 0, false, true},
		{float32(math.NaN()), 0, false, true}} {
		e, nz, bad := binade(c.v)
		if e != c.e || nz != c.nz || bad != c.nonfin {
			t.Errorf("binade(%g) = %d, %v, %v; want %d, %v, %v", c.v, e, nz, bad, c.e, c.nz, c.nonfin)
		}
	}
}

// emulateSplit is what mm_split_halves and the product make of one input: hi + lo / 2^11, with hi
// and lo rounded to fp16 (subnormals, overflow to Inf and all).
func emulateSplit(x float32) float64 {
	hi := half.FromFloat32(x).Float32()
	lo := half.FromFloat32((x - hi) * 2048).Float32()
	return float64(hi) + float64(lo)/2048
}

// hostileRows are rows of one binade span or another at magnitudes across float32's range.
func hostileRows() map[string][]float32 {
	rows := map[string][]float32{}
	mk := func(name string, scale float64, span int) {
		r := make([]float32, 64)
		for i := range r {
			v := (1 + float64(i%7)/7) * scale * math.Ldexp(1, -(i*span)/63) // spans span binades
			if i%2 == 1 {
				v = -v
			}
			r[i] = float32(v)
		}
		rows[name] = r
	}
	mk("near 2^-30", 0x1p-30, 10)
	mk("subnormal 2^-130", 0x1p-130, 10)
	mk("near 65504", 65000, 10)
	mk("beyond 65504", 1e6, 10)
	mk("near 1e30", 1e30, 10)
	mk("span 28 at 1", 1, SplitSpanFP16)
	return rows
}

// Moved by powers of two, every hostile row keeps each entry to 2^-22 relative through the fp16
// split; unmoved, the same rows come out as zeros, lose bits or overflow. A row spanning more than
// SplitSpanFP16 binades loses bits at its small end even when moved: why Choose sends it elsewhere.
func TestSplitScaleKeeps22Bits(t *testing.T) {
	for name, r := range hostileRows() {
		g := RangesOf(r, 1, len(r), make([]float32, len(r)), 1)
		if g.Span > SplitSpanFP16 {
			t.Fatalf("%s: span %d over %d", name, g.Span, SplitSpanFP16)
		}
		row, _ := g.Shifts()
		moved := ScaleRows(r, 1, len(r), row)
		worst, worstUnmoved := 0.0, 0.0
		for i, x := range r {
			back := emulateSplit(moved[i]) * math.Ldexp(1, -row[0])
			worst = max(worst, math.Abs(back-float64(x))/math.Abs(float64(x)))
			e := math.Abs(emulateSplit(x)-float64(x)) / math.Abs(float64(x))
			if math.IsNaN(e) || math.IsInf(e, 0) {
				e = math.Inf(1)
			}
			worstUnmoved = max(worstUnmoved, e)
		}
		if worst > 0x1p-22 {
			t.Errorf("%s: moved, an entry is off by %.3g relative, over 2^-22", name, worst)
		}
		if name != "span 28 at 1" && name != "near 1e30" && worstUnmoved <= 0x1p-22 {
			t.Errorf("%s: unmoved the split already keeps 22 bits (%.3g): the row is not hostile", name, worstUnmoved)
		}
	}
	wide := []float32{1, float32(math.Pi * 0x1p-31)} // 30 binades, 24 bits in the small one
	g := RangesOf(wide, 1, 2, []float32{0, 0}, 1)
	row, _ := g.Shifts()
	moved := ScaleRows(wide, 1, 2, row)
	if e := math.Abs(emulateSplit(moved[1])*math.Ldexp(1, -row[0])-float64(wide[1])) / float64(wide[1]); g.Span <= SplitSpanFP16 || e <= 0x1p-22 {
		t.Errorf("a row spanning %d binades keeps its small entry to %.3g: the span limit is not where the split loses bits", g.Span, e)
	}
}

// Moving the inputs and then the product back is exact: the float64 product of the moved inputs,
// moved back by Unscale, is the float64 product of the originals rounded to float32.
func TestScaleUnscaleExact(t *testing.T) {
	s := Shape{M: 5, N: 4, K: 3}
	a, b := Inputs(s, 9)
	for i := range a {
		a[i] *= float32(math.Ldexp(1, 40*(i/s.K)-80)) // rows from 2^-80 to 2^80
	}
	for i := range b {
		b[i] *= float32(math.Ldexp(1, 30*(i%s.N)-45)) // columns from 2^-45 to 2^45
	}
	g := RangesOf(a, s.M, s.K, b, s.N)
	row, col := g.Shifts()
	ma, mb := ScaleRows(a, s.M, s.K, row), ScaleCols(b, s.K, s.N, col)
	prod := func(a, b []float32) []float64 {
		c := make([]float64, s.M*s.N)
		for i := range s.M {
			for j := range s.N {
				for l := range s.K {
					c[i*s.N+j] += float64(a[i*s.K+l]) * float64(b[l*s.N+j])
				}
			}
		}
		return c
	}
	moved, want := prod(ma, mb), prod(a, b)
	c := make([]float32, len(moved))
	for i, v := range moved {
		c[i] = float32(v)
		if m := math.Abs(v); m >= 0x1p30*float64(s.K) {
			t.Errorf("moved product element %d is %g: over K x 2^30", i, v)
		}
	}
	Unscale(c, s.M, s.N, row, col)
	for i := range c {
		if c[i] != float32(want[i]) {
			t.Errorf("element %d: %g after Unscale, want %g", i, c[i], float32(want[i]))
		}
	}
	if bad, first := CompareBound(s, a, b, c, "float32"); bad != 0 {
		t.Errorf("the exact product fails CompareBound: %s", first)
	}
	c[3] *= 1 + 0x1p-10
	if bad, _ := CompareBound(s, a, b, c, "fp16x3"); bad != 1 {
		t.Errorf("an element off by 2^-10 passes CompareBound (%d bad)", bad)
	}
}

// Choose on an H100: the fp16x3 split on any magnitudes whose rows and columns span at most 28
// binades (moved), 3xTF32 up to 64, a float32 step past that and for Inf or NaN, and a float32
// step where no split takes the shape; each says why.
func TestChoose(t *testing.T) {
	d := labtest.ProfileDevice(t, "h100-sxm")
	s := Shape{M: 256, N: 384, K: 160}
	for _, c := range []struct {
		name  string
		set   func(a, b []float32)
		want  string
		moved bool
		why   string
	}{
		{"uniform", func(a, b []float32) {}, "9 fp16x3 split", true, "fp16x3"},
		{"near 2^-30", func(a, b []float32) { mulBy(a, 0x1p-30); mulBy(b, 0x1p-30) }, "9 fp16x3 split", true, "span"},
		{"1e30 x 1e-30", func(a, b []float32) { mulBy(a, 1e30); mulBy(b, 1e-30) }, "9 fp16x3 split", true, "fp16x3"},
		{"span 40", func(a, b []float32) { a[7] = 1e12 }, "8b 3xTF32 split", true, "row 0 of A spans"},
		{"span 100", func(a, b []float32) { a[7], a[8] = 1e15, 1e-15 }, "7 warp tile", false, "over the 64"},
		{"NaN", func(a, b []float32) { b[9] = float32(math.NaN()) }, "7 warp tile", false, "B[0][9] = NaN"},
		{"-Inf", func(a, b []float32) { a[400] = float32(math.Inf(-1)) }, "7 warp tile", false, "A[2][80] = -Inf"},
	} {
		a, b := Inputs(s, 5)
		for i := range a { // no exact zeros or tiny uniforms: the spans are the case's own
			a[i] = float32(math.Copysign(0.5+math.Abs(float64(a[i]))/2, float64(a[i])))
		}
		for i := range b {
			b[i] = float32(math.Copysign(0.5+math.Abs(float64(b[i]))/2, float64(b[i])))
		}
		c.set(a, b)
		ch := Choose(s, d, a, b)
		if ch.Step.Name != c.want || (ch.RowShift != nil) != c.moved || !strings.Contains(ch.Why, c.why) {
			t.Errorf("%s: %s (moved %v, %q), want %s (moved %v, %q)", c.name, ch.Step.Name, ch.RowShift != nil, ch.Why, c.want, c.moved, c.why)
		}
	}
	if ch := Choose(Shape{M: 100, N: 300, K: 77}, d, make([]float32, 7700), make([]float32, 23100)); ch.Step.Name != AnyShape.Name || ch.RowShift != nil {
		t.Errorf("100 x 300 x 77: %s, moved %v", ch.Step.Name, ch.RowShift != nil)
	}
}

// On an H100 every hostile input takes the step kind it is built for, and the fp16 split's moved
// inputs keep every entry to 2^-22 (emulated split, moved back).
func TestHostileInputsChoose(t *testing.T) {
	d := labtest.ProfileDevice(t, "h100-sxm")
	s := Shape{M: 256, N: 384, K: 160}
	for _, h := range HostileInputs(s, 3) {
		ch := Choose(s, d, h.A, h.B)
		if ch.Step.DType != h.Takes {
			t.Errorf("%s: %s (%s), want a %s step", h.Name, ch.Step.Name, ch.Why, h.Takes)
			continue
		}
		if h.Takes != "fp16x3" {
			continue
		}
		moved := ScaleRows(h.A, s.M, s.K, ch.RowShift)
		for i, x := range h.A {
			back := emulateSplit(moved[i]) * math.Ldexp(1, -ch.RowShift[i/s.K])
			if x != 0 && math.Abs(back-float64(x)) > 0x1p-22*math.Abs(float64(x)) {
				t.Errorf("%s: A[%d] = %g comes back as %g", h.Name, i, x, back)
				break
			}
		}
	}
}

// CompareBound takes IEEE's Inf and NaN: a float32 product on the host (float64 sums rounded
// once) passes on every hostile input, overflow included; a finite value where the product
// overflows, or a number where it is NaN, fails.
func TestCompareBoundNonFinite(t *testing.T) {
	s := Shape{M: 128, N: 128, K: 32}
	for _, h := range HostileInputs(s, 4) {
		c := make([]float32, s.M*s.N)
		for i := range s.M {
			for j := range s.N {
				sum := 0.0
				for l := range s.K {
					sum += float64(h.A[i*s.K+l]) * float64(h.B[l*s.N+j])
				}
				c[i*s.N+j] = float32(sum)
			}
		}
		if bad, first := CompareBound(s, h.A, h.B, c, "float32"); bad != 0 {
			t.Errorf("%s: the rounded float64 product fails: %s", h.Name, first)
		}
		for k, v := range c {
			if math.IsInf(float64(v), 0) || v != v {
				c[k] = 1
				if bad, _ := CompareBound(s, h.A, h.B, c, "float32"); bad != 1 {
					t.Errorf("%s: 1 where the product is %g passes", h.Name, v)
				}
				break
			}
		}
	}
}

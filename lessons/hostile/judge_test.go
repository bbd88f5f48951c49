package hostile

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons/reduce"
)

var (
	inf  = float32(math.Inf(1))
	ninf = float32(math.Inf(-1))
	nan  = float32(math.NaN())
)

func rounded(want []float64) []float32 { return float32s(want) }

// A softmax row that is -inf everywhere is NaN, like PyTorch's: an op must give NaN there, and a
// row with one finite element is exact (1 there, 0 elsewhere).
func TestJudgeSoftmaxMasks(t *testing.T) {
	x := []float32{ninf, ninf, ninf, ninf, ninf, 2, ninf, ninf}
	want := append(reduce.SoftmaxRow(x[:4]), reduce.SoftmaxRow(x[4:])...)
	for i, w := range want[:4] {
		if !math.IsNaN(w) {
			t.Fatalf("the reference of an all -inf row is %g at %d, want NaN", w, i)
		}
	}
	if !slices4(want[4:], []float64{0, 1, 0, 0}) {
		t.Fatalf("the reference of a row with one finite element is %v, want 0 1 0 0", want[4:])
	}
	ok := []float32{nan, nan, nan, nan, 0, 1, 0, 0}
	if j := Judge("y", ok, want, nil, check.FP32, 4); !j.OK {
		t.Errorf("NaN for the all -inf row, exact for the other: %s", j.Why)
	}
	zeros := []float32{0, 0, 0, 0, 0, 1, 0, 0}
	if j := Judge("y", zeros, want, nil, check.FP32, 4); j.OK || j.NaNMissing != 4 {
		t.Errorf("zeros for an all -inf row passed (NaN missing %d)", j.NaNMissing)
	}
	broken := []float32{nan, nan, nan, nan, nan, nan, nan, nan}
	if j := Judge("y", broken, want, nil, check.FP32, 4); j.OK || j.NonFinite != 4 || j.FirstWrong != 4 {
		t.Errorf("NaN for a row with a finite element passed (%d wrong, first at %d)", j.NonFinite, j.FirstWrong)
	}
	off := []float32{nan, nan, nan, nan, 0, 0.999, 0, 0}
	if j := Judge("y", off, want, nil, check.FP32, 4); j.OK {
		t.Errorf("0.999 for an exact 1 passed")
	}
}

func slices4(a, b []float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// R2 and R3: where the reference is NaN the op must be NaN; where it is ±Inf, that infinity; where
// it is finite but overflows float32, the infinity of its sign or NaN, nothing else.
func TestJudgeNonFiniteRules(t *testing.T) {
	want := []float64{1, math.NaN(), 3, 1e39, math.Inf(-1)}
	for _, c := range []struct {
		got  []float32
		pass bool
		why  string
	}{
		{[]float32{1, nan, 3, inf, ninf}, true, "IEEE's values"},
		{[]float32{1, nan, 3, nan, ninf}, true, "NaN where the exact value overflows"},
		{[]float32{1, 2, 3, inf, ninf}, false, "a number where the reference is NaN"},
		{[]float32{1, nan, 3, ninf, ninf}, false, "the infinity of the other sign where the exact value overflows"},
		{[]float32{1, nan, 3, math.MaxFloat32, ninf}, false, "float32's largest where the exact value overflows"},
		{[]float32{1, nan, 3, inf, nan}, false, "NaN where the reference is -Inf"},
		{[]float32{1, nan, inf, inf, ninf}, false, "Inf where the reference is finite"},
	} {
		j := Judge("c", c.got, want, nil, check.FP32, 5)
		if j.OK != c.pass {
			t.Errorf("%s: pass %v, want %v (%s)", c.why, j.OK, c.pass, j.Why)
		}
	}
	if j := Judge("c", []float32{1, 2}, want, nil, check.FP32, 4); j.OK {
		t.Errorf("a short output passed")
	}
}

// R5: PyTorch is judged by the same rules and recorded beside the op, but never fails it; its NaN
// where the reference is finite (0 x inf in a padded formulation, an overflow on the way) asks
// nothing of the op.
func TestJudgeTorchNeverFails(t *testing.T) {
	want := []float64{1, 2, math.NaN()}
	right := []float32{1, 2, nan}
	for _, c := range []struct {
		torch  []float32
		column string
	}{
		{nil, Unavailable},
		{[]float32{1, 2, nan}, "pass"},
		{[]float32{1, nan, nan}, "differs: "},
		{[]float32{1, 2, 3}, "differs: "},
		{[]float32{1, 2.5, nan}, "differs: "},
	} {
		j := Judge("y", right, want, c.torch, check.FP32, 3)
		if !j.OK {
			t.Errorf("PyTorch %v failed a right op: %s", c.torch, j.Why)
		}
		if !strings.HasPrefix(j.Torch, c.column) || (c.column == "pass") != (j.Torch == "pass") {
			t.Errorf("PyTorch %v: the column says %q, want %q...", c.torch, j.Torch, c.column)
		}
	}
	// A wrong op fails whatever PyTorch gives.
	if j := Judge("y", []float32{1, 2, 3}, want, []float32{1, 2, 3}, check.FP32, 3); j.OK {
		t.Errorf("a number where the reference is NaN passed because PyTorch gives it too")
	}
}

// R4: an output with an element bound passes where each element is within its bound of the float64
// reference, and fails one element past it; where the sum of |terms| passes float32's largest, a
// non-finite result is accepted, and nowhere else.
func TestJudgeElementBound(t *testing.T) {
	// A row that cancels: 1e8 + 1 - 1e8 in float32 is 0 or 2 by the order (one rounding of 1e8
	// is 4): the exact 1 is far in relative terms, within the bound 3u sum |terms|.
	a, b := []float32{1e8, 1, -1e8}, []float32{1, 1, 1}
	out := productOutput("c", a, 1, 3, b, 1, "float32")
	if out.Mag[0] != 2e8+1 || out.Want[0] != 1 {
		t.Fatalf("the reference %g and the sum of |terms| %g, want 1 and 2e8+1", out.Want[0], out.Mag[0])
	}
	for _, c := range []struct {
		got  float32
		pass bool
	}{{0, true}, {8, true}, {-8, true}, {1 + 3*check.U32*(2e8+1) + 1, false}, {nan, false}, {inf, false}} {
		out.Got = []float32{c.got}
		if j := JudgeOutput(out, nil); j.OK != c.pass {
			t.Errorf("%g for a cancelled 1 (bound %g): pass %v, want %v (%s)", c.got, out.Bound[0], j.OK, c.pass, j.Why)
		}
	}
	// Terms beyond float32's largest that cancel: the exact value is finite in float32, a partial
	// sum overflows in some orders, so Inf or NaN is accepted, and so is the exact value; a wrong
	// finite value is not.
	big := []float32{3e38, 3e38, -3e38}
	out = productOutput("c", big, 1, 3, b, 1, "float32")
	for _, c := range []struct {
		got  float32
		pass bool
	}{{inf, true}, {nan, true}, {ninf, true}, {3e38, true}, {1e38, false}} {
		out.Got = []float32{c.got}
		j := JudgeOutput(out, nil)
		if j.OK != c.pass {
			t.Errorf("%g for 3e38 + 3e38 - 3e38: pass %v, want %v (%s)", c.got, j.OK, c.pass, j.Why)
		}
		if c.pass && !isFinite(float64(c.got)) && j.Overflowed != 1 {
			t.Errorf("%g for 3e38 + 3e38 - 3e38 not counted as an accepted overflow", c.got)
		}
	}
	// The exact answer overflows (1e20 x 1e20): R3 decides, any infinity or NaN (the first product
	// past the range sets the sign a float32 accumulation keeps), never a finite value.
	out = productOutput("c", []float32{1e20, -1e20}, 1, 2, []float32{1e20, 1e19}, 1, "float32")
	for _, c := range []struct {
		got  float32
		pass bool
	}{{inf, true}, {nan, true}, {ninf, true}, {math.MaxFloat32, false}, {1e38, false}} {
		out.Got = []float32{c.got}
		if j := JudgeOutput(out, nil); j.OK != c.pass {
			t.Errorf("%g for 1e40 - 1e39: pass %v, want %v (%s)", c.got, j.OK, c.pass, j.Why)
		}
	}
}

// At 1e-30 a result 1e-3 off fails, as it does at 1: the comparison is in the output's own scale,
// row by row; a correctly rounded one passes.
func TestJudgeIsRelative(t *testing.T) {
	for _, scale := range []float64{1e-30, 1, 1e30} {
		want := make([]float64, 64)
		r := rng(5)
		for i := range want {
			want[i] = r.NormFloat64() * scale
		}
		if j := Judge("y", rounded(want), want, nil, check.FP32, 16); !j.OK {
			t.Errorf("scale %g: the reference rounded to float32 failed: %s", scale, j.Why)
		}
		off := make([]float32, len(want))
		for i, w := range want {
			off[i] = float32(w * (1 + 1e-3))
		}
		if j := Judge("y", off, want, nil, check.FP32, 16); j.OK {
			t.Errorf("scale %g: a result 1e-3 off passed", scale)
		}
	}
	// Rows at 1e-30 beside rows at 1e30: each row held to its own scale.
	want := []float64{1e-30, 2e-30, 1e30, 2e30}
	got := []float32{2e-30, 2e-30, 1e30, 2e30}
	if j := Judge("y", got, want, nil, check.FP32, 2); j.OK {
		t.Errorf("a row at 1e-30 wrong by 100%% hid beside a row at 1e30")
	}
	// Outputs that underflow float32 are 0 in float32: an op giving 0 is right.
	if j := Judge("c", []float32{0, 0}, []float64{1e-60, -3e-58}, nil, check.FP32, 2); !j.OK {
		t.Errorf("zeros where the exact value underflows float32 failed: %s", j.Why)
	}
}

// The tolerance is the lesson's: an error within check.FP32's relative bound passes, one over it
// fails, and a floor derived for tiny references is scaled with its row.
func TestJudgeTolerance(t *testing.T) {
	want := []float64{1, -2, 3, -4, 5, -6, 7, -8}
	within, over := make([]float32, len(want)), make([]float32, len(want))
	for i, w := range want {
		within[i] = float32(w * (1 + 3e-6))
		over[i] = float32(w * (1 + 3e-4))
	}
	if j := Judge("y", within, want, nil, check.FP32, 8); !j.OK {
		t.Errorf("3e-6 relative error failed check.FP32: %s", j.Why)
	}
	if j := Judge("y", over, want, nil, check.FP32, 8); j.OK {
		t.Errorf("3e-4 relative error passed check.FP32")
	}
	// A zero reference with a floor: an error of 1e-9 at the row's scale of 1e-3 is 1e-6 relative.
	floor := check.FP32.WithFloor(1e-9, "test")
	w2 := []float64{0, 1e-3, -1e-3, 1e-3}
	if j := Judge("dx", []float32{1e-9, 1e-3, -1e-3, 1e-3}, w2, nil, floor, 4); !j.OK {
		t.Errorf("an error of one floor on a zero reference failed: %s", j.Why)
	}
	if j := Judge("dx", []float32{1e-6, 1e-3, -1e-3, 1e-3}, w2, nil, floor, 4); j.OK {
		t.Errorf("an error of 1000 floors on a zero reference passed")
	}
	// Against PyTorch: judged by the same tolerance, recorded beside the op.
	j := Judge("y", rounded(want), want, over, check.FP32, 8)
	if !j.OK || !strings.HasPrefix(j.Torch, "differs: ") {
		t.Errorf("PyTorch 3e-4 off: the op passes (%v) and the column says so (%q)", j.OK, j.Torch)
	}
}

// An op that refuses before launch, naming why, is a pass of kind refused; a refusal without a
// reason, or a failed launch, is a failure.
func TestRefused(t *testing.T) {
	fake := func(err error) *Op {
		return &Op{Name: "fake", Lesson: "00", Outputs: []string{"y"},
			Inputs:  func(s Shape, d Dist, seed uint64) []Input { return []Input{draw(s, d, "x", s.Dims, seed)} },
			Predict: func(gpu.DeviceInfo, Shape, []Input) string { return "1 step" },
			Run: func(*lab.Env, Shape, []Input) (map[string][]float32, string, error) {
				if err != nil {
					return nil, "1 step", err
				}
				return map[string][]float32{"y": {1, 2}}, "1 step", nil
			},
			Reference: func(Shape, []Input, string) []Output {
				return []Output{{Name: "y", Want: []float64{1, 2}, Tol: check.FP32, Cols: 2}}
			}}
	}
	for _, c := range []struct {
		err     error
		verdict string
	}{{errors.New("fake: x holds a NaN: refused before any launch"), Refused}, {errors.New(" "), Fail},
		{errors.New("launching: an illegal memory access was encountered"), Fail}, {nil, Pass}} {
		op := fake(c.err)
		row := runCase(&lab.Env{}, gpu.DeviceInfo{}, Case{Op: op, Dist: Dists[0], Shape: Shape{Dims: []int{1, 2}}, Seed: 1}, "c0", nil)
		if row.Verdict != c.verdict {
			t.Errorf("error %v: verdict %s, want %s (%s)", c.err, row.Verdict, c.verdict, row.Why)
		}
		if c.verdict == Refused && row.Why != c.err.Error() {
			t.Errorf("a refusal records %q, want the op's reason %q", row.Why, c.err)
		}
		if c.err == nil && row.Torch != Unavailable {
			t.Errorf("without PyTorch the column says %q, want %q", row.Torch, Unavailable)
		}
	}
}

// A perfect op (the float64 reference rounded to float32) passes every case of the catalogue's
// short shapes under every distribution, and one wrong element in an output fails its case (off by
// 1% and beyond its tolerance or twice its element bound): the references, tolerances, bounds and
// non-finite rules neither reject the right answer nor miss a wrong one.
func TestPerfectOpPassesBrokenOpFails(t *testing.T) {
	dev := recordedDevices(t)[1]
	for _, c := range Cases(Catalogue(), nil, true, 11) {
		in := c.Op.Inputs(c.Shape, c.Dist, c.Seed)
		step := c.Op.Predict(dev, c.Shape, in)
		for _, out := range c.Op.Reference(c.Shape, in, step) {
			got := float32s(out.Want)
			out.Got = got
			if j := JudgeOutput(out, nil); !j.OK {
				t.Errorf("%s %s %s: the rounded reference of %s fails: %s", c.Op.Name, c.Shape, c.Dist.Name, out.Name, j.Why)
			}
			for i, w := range out.Want {
				if v := float32(w); isFinite(float64(v)) {
					floor := out.Tol.Floor
					if out.RowFloor != nil && floor > 0 {
						floor = out.RowFloor(i / out.Cols)
					}
					// 1% off, plus 1e-3 of the row's scale and 100 floors (a tolerance's), or twice the
					// element's bound, all away from zero.
					off := 0.01*math.Abs(float64(v)) + 1e-3*rowScale(out.Want[(i/out.Cols)*out.Cols:min((i/out.Cols+1)*out.Cols, len(out.Want))]) + 100*floor
					if out.Bound != nil {
						off = 0.01*math.Abs(float64(v)) + 2*out.Bound[i]
					}
					got[i] = float32(float64(v) + math.Copysign(off, float64(v)))
					if j := JudgeOutput(out, nil); j.OK {
						t.Errorf("%s %s %s: %s with element %d 1%% off passes", c.Op.Name, c.Shape, c.Dist.Name, out.Name, i)
					}
					break
				}
			}
		}
	}
}

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
	if j := Judge("y", broken, want, nil, check.FP32, 4); j.OK || j.NonFiniteWrong != 4 || j.FirstWrong != 4 {
		t.Errorf("NaN for a row with a finite element passed (%d wrong, first at %d)", j.NonFiniteWrong, j.FirstWrong)
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

// Where PyTorch gives NaN the op must too, even where the float64 reference is finite; where the
// exact value overflows float32 the op may be infinite of its sign or NaN, nothing else.
func TestJudgeFollowsPyTorch(t *testing.T) {
	want := []float64{1, math.NaN(), 3, 1e39}
	got := []float32{1, 2, 3, inf}
	torch := []float32{1, nan, 3, nan}
	if j := Judge("c", got, want, torch, check.FP32, 4); j.OK || j.NaNMissing != 2 {
		t.Errorf("finite or infinite values where PyTorch and the reference give NaN passed (%d NaN missing)", j.NaNMissing)
	}
	got[1], got[3] = nan, nan
	if j := Judge("c", got, want, torch, check.FP32, 4); !j.OK {
		t.Errorf("NaN where PyTorch gives NaN failed: %s", j.Why)
	}
	// PyTorch not finite from an overflow inside its float32 arithmetic, the exact value finite:
	// the op may be non-finite too or give the exact value, not a wrong one; without PyTorch it
	// must be right.
	exact := []float64{1, 2}
	for _, c := range []struct {
		got, torch   []float32
		pass         bool
		shared, beat int
	}{{[]float32{1, nan}, []float32{1, nan}, true, 1, 0}, {[]float32{1, inf}, []float32{1, nan}, true, 1, 0},
		{[]float32{1, nan}, []float32{1, ninf}, true, 1, 0}, {[]float32{1, 2}, []float32{1, nan}, true, 0, 1},
		{[]float32{1, 2.5}, []float32{1, nan}, false, 0, 1}, {[]float32{1, nan}, nil, false, 0, 0}} {
		j := Judge("loss", c.got, exact, c.torch, check.FP32, 2)
		if j.OK != c.pass || j.TorchOverflowShared != c.shared || j.TorchOverflowBeaten != c.beat {
			t.Errorf("%v where PyTorch gives %v and the exact value is %v: pass %v, shared %d, beaten %d", c.got, c.torch, exact, j.OK, j.TorchOverflowShared, j.TorchOverflowBeaten)
		}
	}
	over := []float64{1e39, -1e39, 1}
	for _, c := range []struct {
		got  []float32
		pass bool
	}{{[]float32{inf, ninf, 1}, true}, {[]float32{nan, nan, 1}, true}, {[]float32{ninf, ninf, 1}, false},
		{[]float32{math.MaxFloat32, ninf, 1}, false}, {[]float32{inf, ninf, nan}, false}} {
		if j := Judge("c", c.got, over, nil, check.FP32, 3); j.OK != c.pass {
			t.Errorf("%v against %v: pass %v, want %v (%s)", c.got, over, j.OK, c.pass, j.Why)
		}
	}
	if j := Judge("c", []float32{1, 2}, want, nil, check.FP32, 4); j.OK {
		t.Errorf("a short output passed")
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
	// Against PyTorch: recorded beside the reference, within twice the tolerance or not.
	j := Judge("y", rounded(want), want, over, check.FP32, 8)
	if !j.OK || !strings.Contains(j.Torch, "NOT within 2x") {
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
// short shapes under every distribution, and one wrong element in an output fails its case: the
// references, tolerances and non-finite rules neither reject the right answer nor miss a wrong one.
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
					got[i] = v*1.01 + float32(1e-3*rowScale(out.Want[(i/out.Cols)*out.Cols:min((i/out.Cols+1)*out.Cols, len(out.Want))])+100*floor)
					if j := JudgeOutput(out, nil); j.OK {
						t.Errorf("%s %s %s: %s with element %d 1%% off passes", c.Op.Name, c.Shape, c.Dist.Name, out.Name, i)
					}
					break
				}
			}
		}
	}
}

package kernelbench

import (
	"math"
	"runtime"
	"slices"
	"testing"
)

// Draw gives each distribution its range and moments, the same values whatever the number of
// goroutines, and different values for different seeds.
func TestDraw(t *testing.T) {
	n := 3*chunk + 17 // several chunks and a tail
	stats := func(x []float32) (lo, hi, mean, sd float64) {
		lo, hi = math.Inf(1), math.Inf(-1)
		var s, q float64
		for _, v := range x {
			f := float64(v)
			lo, hi, s, q = math.Min(lo, f), math.Max(hi, f), s+f, q+f*f
		}
		mean = s / float64(len(x))
		return lo, hi, mean, math.Sqrt(q/float64(len(x)) - mean*mean)
	}
	u := Draw(Tensor{Shape: []int{n}, Dist: Rand}, 5)
	if lo, hi, mean, sd := stats(u); lo < 0 || hi >= 1 || math.Abs(mean-0.5) > 1e-3 || math.Abs(sd-math.Sqrt(1.0/12)) > 1e-3 {
		t.Errorf("torch.rand: [%g, %g], mean %g, sd %g", lo, hi, mean, sd)
	}
	g := Draw(Tensor{Shape: []int{n}, Dist: Randn}, 6)
	if _, _, mean, sd := stats(g); math.Abs(mean) > 2e-3 || math.Abs(sd-1) > 2e-3 {
		t.Errorf("torch.randn: mean %g, sd %g", mean, sd)
	}
	k := Tensor{Shape: []int{n}, Dist: KaimingUniform, FanIn: 576}
	if lo, hi, mean, _ := stats(Draw(k, 7)); lo < -k.Bound() || hi >= k.Bound() || hi < 0.99*k.Bound() || math.Abs(mean) > 1e-4 {
		t.Errorf("kaiming uniform, bound %g: [%g, %g], mean %g", k.Bound(), lo, hi, mean)
	}
	if lo, hi, _, _ := stats(Draw(Tensor{Shape: []int{5}, Dist: Ones}, 1)); lo != 1 || hi != 1 {
		t.Error("ones are not all 1")
	}
	if lo, hi, _, _ := stats(Draw(Tensor{Shape: []int{5}, Dist: Zeros}, 1)); lo != 0 || hi != 0 {
		t.Error("zeros are not all 0")
	}
	prev := runtime.GOMAXPROCS(1)
	one := Draw(Tensor{Shape: []int{n}, Dist: Rand}, 5)
	runtime.GOMAXPROCS(prev)
	if !slices.Equal(one, u) {
		t.Error("the values depend on the number of goroutines")
	}
	if slices.Equal(Draw(Tensor{Shape: []int{n}, Dist: Rand}, 8), u) {
		t.Error("two seeds gave the same values")
	}
}

// Every trial draws fresh inputs; the parameters are drawn once and shared.
func TestTrials(t *testing.T) {
	p := SmallProblems()[6] // the level-2 problem: an input and three parameters
	params := DrawParams(p)
	if params[0] != nil {
		t.Error("DrawParams drew the input")
	}
	a, b := DrawTrial(p, params, 0), DrawTrial(p, params, 1)
	if slices.Equal(a[0], b[0]) {
		t.Error("two trials have the same input")
	}
	for i := 1; i < len(p.Tensors); i++ {
		if &a[i][0] != &params[i][0] || &b[i][0] != &params[i][0] {
			t.Errorf("trial tensor %d (%s) is not the parameter drawn once", i, p.Tensors[i].Name)
		}
	}
	if !slices.Equal(DrawTrial(p, params, 1)[0], b[0]) {
		t.Error("a trial's input is not reproducible")
	}
}

func TestSliceIndices(t *testing.T) {
	for _, c := range []struct{ batch, n int }{{4096, 4}, {16, 2}, {256, 4}, {3, 1}, {2, 4}, {1, 1}, {128, 2}} {
		for trial := 0; trial < 5; trial++ {
			idx := SliceIndices(c.batch, c.n, trial)
			want := min(c.n, c.batch)
			if len(idx) != want || !slices.IsSorted(idx) || len(slices.Compact(slices.Clone(idx))) != want {
				t.Errorf("batch %d, %d slices, trial %d: %v", c.batch, c.n, trial, idx)
				continue
			}
			if idx[0] < 0 || idx[len(idx)-1] >= c.batch {
				t.Errorf("batch %d: %v out of range", c.batch, idx)
			}
			if c.n >= 2 && (idx[0] != 0 || idx[len(idx)-1] != c.batch-1) {
				t.Errorf("batch %d, %d slices: %v lacks the first or last", c.batch, c.n, idx)
			}
		}
	}
	if slices.Equal(SliceIndices(4096, 4, 0), SliceIndices(4096, 4, 1)) {
		t.Error("two trials compare the same rows")
	}
}

func TestGatherAndSliceInputs(t *testing.T) {
	x := []float32{0, 1, 2, 3, 4, 5, 6, 7, 8}
	if got := Gather(x, 3, []int{0, 2}); !slices.Equal(got, []float32{0, 1, 2, 6, 7, 8}) {
		t.Errorf("Gather: %v", got)
	}
	p := SmallProblems()[0]
	trial := DrawTrial(p, DrawParams(p), 0)
	in := SliceInputs(p, trial, []int{1, 3})
	if len(in[0]) != 2*p.InPer() || !slices.Equal(in[0][:p.InPer()], trial[0][p.InPer():2*p.InPer()]) {
		t.Error("the first tensor is not cut to the slices")
	}
	if len(in[1]) != len(trial[1]) {
		t.Error("B is not whole")
	}
	if s := SliceShape([]int{16, 64, 256, 256}, 2); !slices.Equal(s, []int{2, 64, 256, 256}) {
		t.Errorf("SliceShape: %v", s)
	}
}

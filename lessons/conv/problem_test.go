package conv

import (
	"math"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/gpu"
)

// The float64 reference is right: a hand-computed case, and agreement with an independent im2col
// formulation on awkward shapes (padding at every border, strides over the kernel size).
func TestReferenceByHand(t *testing.T) {
	s := Shape{N: 1, C: 1, H: 2, W: 2, K: 1, R: 3, S: 1, P: 1}
	in := Inputs{X: []float32{1, 2, 3, 4}, W: []float32{0, 0, 0, 0, 1, 2, 0, 3, 0}, B: []float32{0.5}}
	// y[0][0] = x[0][0]*w[1][1] + x[0][1]*w[1][2] + x[1][0]*w[2][1] + bias = 1 + 4 + 9 + 0.5
	if got := ConvAt(s, in, 0, 0, 0, 0); got != 14.5 {
		t.Errorf("y[0][0] = %v, want 14.5", got)
	}
	// y[1][1] = x[1][1]*w[1][1] + bias (its right and lower neighbours are padding)
	if got := ConvAt(s, in, 0, 0, 1, 1); got != 4.5 {
		t.Errorf("y[1][1] = %v, want 4.5", got)
	}
}

func TestReferenceAgreesWithIm2col(t *testing.T) {
	for i, s := range []Shape{{N: 2, C: 3, H: 7, W: 9, K: 5, R: 3, S: 2, P: 1}, {N: 1, C: 2, H: 9, W: 8, K: 7, R: 2, S: 5, P: 0}, {N: 1, C: 3, H: 23, W: 19, K: 4, R: 11, S: 4, P: 2}} {
		in := NewInputs(s, uint64(i))
		a, b := Conv(s, in), Im2colConv(s, in)
		for j := range a {
			if math.Abs(a[j]-b[j]) > 1e-12 {
				t.Fatalf("%v: output %d: %v vs im2col %v", s, j, a[j], b[j])
			}
		}
		if s.ValidatePool() != nil {
			continue
		}
		pool := MaxPool(s, a, true)
		for j := range pool {
			if got := poolFlat(s, in, j, true); math.Abs(got-pool[j]) > 1e-12 {
				t.Fatalf("%v: pooled %d: %v vs %v", s, j, got, pool[j])
			}
		}
	}
}

func TestShapes(t *testing.T) {
	if AlexNet.OH() != 55 || AlexNet.OW() != 55 || AlexNet.PH() != 27 || AlexNet.Taps() != 363 {
		t.Errorf("AlexNet: %d x %d, pool %d, taps %d", AlexNet.OH(), AlexNet.OW(), AlexNet.PH(), AlexNet.Taps())
	}
	if Deep.OH() != 56 || Deep.Taps() != 2304 {
		t.Errorf("Deep: %d, %d taps", Deep.OH(), Deep.Taps())
	}
	if tph, tpw := PoolTile(AlexNet); (2*tph+1)*(2*tpw+1) > TileM || tph != 4 || tpw != 6 {
		t.Errorf("AlexNet's pool tile %dx%d, want 4x6 (region 9x13 = 117)", tph, tpw)
	}
}

// Bad layers are refused before any launch, with the problem and the limit named.
func TestBadShapesAreRefused(t *testing.T) {
	d := gpu.DeviceInfo{Major: 9, Minor: 0, SMs: 132, MaxThreadsPerBlock: 1024}
	cases := []struct {
		s    Shape
		want string
	}{
		{Shape{N: 1, C: 3, H: 5, W: 5, K: 4, R: 11, S: 1, P: 2}, "larger than the padded input"},
		{Shape{N: 1, C: 3, H: 8, W: 8, K: 4, R: 3, S: 0, P: 1}, "stride 0"},
		{Shape{N: 0, C: 3, H: 8, W: 8, K: 4, R: 3, S: 1, P: 1}, "batch N = 0"},
		{Shape{N: 1, C: 3, H: 8, W: 8, K: 4, R: 3, S: 1, P: 2}, "half the kernel size"},
		{Shape{N: 1, C: 3, H: 9000, W: 8, K: 4, R: 3, S: 1, P: 1}, "sides up to 8192"},
	}
	for _, c := range cases {
		for _, st := range Steps {
			_, err := st.PlanFor(c.s, d)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s on %v: %v, want an error about %q", st.Name, c.s, err, c.want)
			}
		}
	}
	deep := Shape{N: 1, C: 512, H: 8, W: 8, K: 8, R: 3, S: 1, P: 1}
	for _, st := range Steps[2:] {
		if _, err := st.PlanFor(deep, d); err == nil || !strings.Contains(err.Error(), "over the step's limit of 4096") {
			t.Errorf("%s on C*R*R = 4608: %v", st.Name, err)
		}
	}
	if _, err := Steps[0].PlanFor(deep, d); err != nil {
		t.Errorf("step 1 takes any depth: %v", err)
	}
	if _, err := Steps[1].PlanFor(Shape{N: 1, C: 1, H: 200, W: 200, K: 1, R: 7, S: 8, P: 3}, d); err == nil || !strings.Contains(err.Error(), "over the step's limit of 49152") {
		t.Errorf("step 2 on a 7x7 stride-8 layer: %v", err)
	}
	tiny := Shape{N: 1, C: 1, H: 2, W: 2, K: 1, R: 1, S: 1, P: 0}
	if _, err := MustStep("7").PlanFor(tiny, d); err == nil || !strings.Contains(err.Error(), "3 x 3 max pool") {
		t.Errorf("fused step on a 2x2 output: %v", err)
	}
	if _, err := Steps[3].PlanFor(AlexNet, gpu.DeviceInfo{Major: 7, Minor: 5}); err == nil || !strings.Contains(err.Error(), "compute capability 8.0") {
		t.Errorf("tensor cores on 7.5: %v", err)
	}
}

// The tolerances are the suite's, with the absolute term raised to the rounding model's 10 sigma.
func TestTolerances(t *testing.T) {
	if Tol(F32).Name != "fp32" || Tol(TF32).Abs < 1.3e-3 || Tol(FP16).Abs < 1.3e-3 || Tol(FP16).RelL2 != 1e-3 {
		t.Errorf("tolerances: %+v %+v %+v", Tol(F32), Tol(TF32), Tol(FP16))
	}
}

// Float bits as ints order like the floats for values >= 0, and backwards for negatives.
func TestBitOrder(t *testing.T) {
	rows := BitOrder()
	if len(rows) == 0 {
		t.Fatal("no rows")
	}
	if !IntMaxAgrees(0.25, 3) || IntMaxAgrees(-1, -2) || IntMaxAgrees(-0.5, 0.25) == false {
		t.Error("the integer max of float bits should agree for non-negative values (and mixed signs), not for two negatives")
	}
}

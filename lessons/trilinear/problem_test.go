package trilinear

import (
	"math"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/autograd"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
)

// articleForward is the article's formula written out (u, v, w, a, b, c, d = 1-a-b-c), for points
// inside [-1, 1].
func articleForward(s Shape, feats, points []float64) []float64 {
	out := make([]float64, s.OutLen())
	for n := 0; n < s.N; n++ {
		u, v, w := (points[3*n]+1)/2, (points[3*n+1]+1)/2, (points[3*n+2]+1)/2
		a, b, c := (1-v)*(1-w), (1-v)*w, v*(1-w)
		d := 1 - a - b - c
		for f := 0; f < s.F; f++ {
			x := func(k int) float64 { return feats[n*8*s.F+k*s.F+f] }
			out[n*s.F+f] = (1-u)*(a*x(0)+b*x(1)+c*x(2)+d*x(3)) + u*(a*x(4)+b*x(5)+c*x(6)+d*x(7))
		}
	}
	return out
}

func TestForwardIsTheArticlesFormula(t *testing.T) {
	for _, s := range []Shape{{1, 1}, {7, 3}, {4, 37}} {
		in := NewInputs(s, 3, -1, 1)
		f, p := widen(in.Feats), widen(in.Points)
		want := articleForward(s, f, p)
		for i, got := range Forward(s, f, p) {
			if math.Abs(got-want[i]) > 1e-14 {
				t.Fatalf("%v: out[%d] = %v, the article's formula %v", s, i, got, want[i])
			}
		}
	}
}

// Both gradients against central finite differences of L = sum(g * out), which is linear in feats
// (exact up to rounding) and a cubic in the points (h^2 truncation).
func TestReferenceGradientsMatchFiniteDifferences(t *testing.T) {
	s := Shape{N: 5, F: 6}
	in := NewInputs(s, 9, -0.95, 0.95)
	feats, points, g := widen(in.Feats), widen(in.Points), widen(in.G)
	loss := func() float64 {
		var l float64
		for i, o := range Forward(s, feats, points) {
			l += g[i] * o
		}
		return l
	}
	const h = 1e-5
	fd := func(x []float64, i int) float64 {
		old := x[i]
		x[i] = old + h
		lp := loss()
		x[i] = old - h
		lm := loss()
		x[i] = old
		return (lp - lm) / (2 * h)
	}
	df := BackwardFeats(s, points, g, nil)
	for i := range feats {
		if want := fd(feats, i); math.Abs(df[i]-want) > 1e-8 {
			t.Fatalf("dfeats[%d] = %v, finite difference %v", i, df[i], want)
		}
	}
	dp := BackwardPoints(s, feats, points, g, nil)
	for i := range points {
		if want := fd(points, i); math.Abs(dp[i]-want) > 1e-7*math.Max(1, math.Abs(want)) {
			t.Fatalf("dpoints[%d] = %v, finite difference %v", i, dp[i], want)
		}
	}
	// The sampled-row references are the full ones restricted to those rows.
	rows := []int{1, 4}
	part := BackwardPoints(s, feats, points, g, rows)
	for i, n := range rows {
		for j := 0; j < 3; j++ {
			if part[3*i+j] != dp[3*n+j] {
				t.Fatalf("rows: dpoints of point %d differs", n)
			}
		}
	}
}

func TestClampRule(t *testing.T) {
	s := Shape{N: 1, F: 2}
	feats := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	g := []float64{1, 0.5}
	out := Forward(s, feats, []float64{1.5, -3, 0.25})
	want := Forward(s, feats, []float64{1, -1, 0.25})
	if out[0] != want[0] || out[1] != want[1] {
		t.Errorf("a point outside [-1,1] is not clamped: %v, want %v", out, want)
	}
	dp := BackwardPoints(s, feats, []float64{1.5, -3, 0.25}, g, nil)
	if dp[0] != 0 || dp[1] != 0 || dp[2] == 0 {
		t.Errorf("dpoints of a clamped point = %v: want 0 for the clamped coordinates only", dp)
	}
	if nan := Forward(s, feats, []float64{math.NaN(), 0, 0}); !math.IsNaN(nan[0]) {
		t.Errorf("a NaN coordinate gave %v: NaN must propagate", nan)
	}
	w := Weights([]float64{0.3, -0.2, 0.9})
	var sum float64
	for _, x := range w {
		sum += x
	}
	if math.Abs(sum-1) > 1e-15 {
		t.Errorf("weights sum to %v", sum)
	}
}

func TestGradCheckCPU(t *testing.T) {
	for i, s := range GradCheckShapes {
		res, err := GradCheckCPU(s, uint64(20+i))
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK {
			t.Errorf("%v: %v: %v", s, res, res.Err())
		}
		if want := s.FeatsLen() + s.PointsLen(); res.Checked != want {
			t.Errorf("%v: checked %d elements, want %d", s, res.Checked, want)
		}
	}
}

// A wrong points gradient (a sign flipped on one face) must fail the check: the check can fail.
func TestGradCheckCatchesAWrongPointsGradient(t *testing.T) {
	s := Shape{N: 2, F: 3}
	feats, points := GradInputs(s, 4)
	res, err := autograd.GradCheck(func(tp *autograd.Tape, in []*autograd.Tensor) (*autograd.Tensor, error) {
		return GradLoss(tp, wrongOp{}, in[0], in[1])
	}, []*autograd.Tensor{feats, points}, autograd.Float64Check)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || !strings.Contains(res.Err().Error(), "points[") {
		t.Errorf("a wrong dpoints passed or was not named: %v %v", res, res.Err())
	}
}

type wrongOp struct{ CPUOp }

func (wrongOp) Backward(ctx *autograd.Context, g *autograd.Tensor) ([]*autograd.Tensor, error) {
	grads, err := CPUOp{}.Backward(ctx, g)
	if err == nil && grads[1] != nil {
		v, _ := grads[1].Values()
		w := append([]float64(nil), v...)
		for i := 0; i < len(w); i += 3 {
			w[i] = -w[i]
		}
		grads[1] = autograd.New("dpoints", w, grads[1].Shape...)
	}
	return grads, err
}

func TestOpRefusesBadShapes(t *testing.T) {
	tp := autograd.NewTape()
	cases := map[string][]*autograd.Tensor{
		"feats (2,7,3)":   {autograd.New("f", make([]float64, 42), 2, 7, 3), autograd.New("p", make([]float64, 6), 2, 3)},
		"points (2,2)":    {autograd.New("f", make([]float64, 48), 2, 8, 3), autograd.New("p", make([]float64, 4), 2, 2)},
		"N mismatch":      {autograd.New("f", make([]float64, 48), 2, 8, 3), autograd.New("p", make([]float64, 9), 3, 3)},
		"one input":       {autograd.New("f", make([]float64, 48), 2, 8, 3)},
		"feats of 2 dims": {autograd.New("f", make([]float64, 16), 2, 8), autograd.New("p", make([]float64, 6), 2, 3)},
	}
	for name, in := range cases {
		if _, err := tp.Apply(CPUOp{}, in...); err == nil {
			t.Errorf("%s was accepted", name)
		}
	}
	// Empty shapes are valid: N = 0 or F = 0 give an empty output and no error.
	for _, s := range []Shape{{0, 5}, {4, 0}, {0, 0}} {
		out, err := tp.Apply(CPUOp{}, autograd.New("f", []float64{}, s.N, 8, s.F), autograd.New("p", make([]float64, 3*s.N), s.N, 3))
		if err != nil || out.Len() != 0 {
			t.Errorf("%v: %v, %v", s, out, err)
		}
	}
	for _, s := range []Shape{{-1, 3}, {3, -2}, {1 << 31, 1}, {1 << 30, 1 << 20}} {
		if err := s.Validate(); err == nil {
			t.Errorf("%v was accepted", s)
		}
	}
}

var h100 = gpu.DeviceInfo{Name: "H100", Major: 9, SMs: 132, MaxThreadsPerSM: 2048, MaxThreadsPerBlock: 1024, WarpSize: 32,
	MaxSharedPerBlock: 48 << 10, MaxSharedPerBlockOptin: 227 << 10}

// Every step takes the article's shape with its fast kernel; awkward shapes get the general kernel
// of the step, with the reason; the article's launch refuses an F past its grid.
func TestPlans(t *testing.T) {
	for _, st := range Steps {
		l, err := st.PlanFor(ArticleShape, h100, true)
		if err != nil {
			t.Fatalf("%s: %v", st.Name, err)
		}
		if l.Kernel != st.Kernel || l.Note != "" {
			t.Errorf("%s at the article's shape: %s (%s), want %s", st.Name, l.Kernel, l.Note, st.Kernel)
		}
		if err := gpu.CheckConfig(h100, gpu.KernelAttrs{}, l.Config); err != nil {
			t.Errorf("%s: %v", st.Name, err)
		}
		for _, s := range []Shape{{1, 1}, {3, 3}, {5, 255}, {7, 4}, {2, 8}, {1, 4096}} {
			for _, aligned := range []bool{true, false} {
				l, err := st.PlanFor(s, h100, aligned)
				if err != nil {
					t.Fatalf("%s %v: %v", st.Name, s, err)
				}
				if err := gpu.CheckConfig(h100, gpu.KernelAttrs{}, l.Config); err != nil {
					t.Errorf("%s %v: %v", st.Name, s, err)
				}
				general := l.Kernel != st.Kernel
				mult := 4
				if st.DType != F32 {
					mult = 8
				}
				wantGeneral := st.Name != "1 article" && st.Name != "2 coalesced" && (!aligned || s.F%mult != 0)
				if general != wantGeneral || (general && l.Note == "") {
					t.Errorf("%s %v aligned %v: kernel %s (%s)", st.Name, s, aligned, l.Kernel, l.Note)
				}
			}
		}
	}
	if _, err := Steps[0].PlanFor(Shape{N: 1, F: MaxArticleF + 1}, h100, true); err == nil || !strings.Contains(err.Error(), "65535") {
		t.Errorf("the article's launch took F = %d: %v", MaxArticleF+1, err)
	}
	if tx, ty := VecBlock(64); tx != 64 || ty != 4 {
		t.Errorf("VecBlock(64) = %d, %d", tx, ty)
	}
	if tx, ty := VecBlock(1); tx != 8 || ty != 32 {
		t.Errorf("VecBlock(1) = %d, %d", tx, ty)
	}
	if tx, ty := VecBlock(1000); tx != 256 || ty != 1 {
		t.Errorf("VecBlock(1000) = %d, %d", tx, ty)
	}
	if _, err := StepByName("3"); err != nil {
		t.Error(err)
	}
	if _, err := StepByName("9"); err == nil {
		t.Error("step 9 found")
	}
}

// The points gradient at F = 1048561 (the input that showed the fixed bound failing correct kernels):
// a float32 kernel modelled on the CPU (each channel's eight corners summed, then the channels
// accumulated in float32 in order, the longest chain a kernel can take) passes PointsTolerance,
// while an all-zero gradient and a gradient with one corner's sign flipped fail it.
func TestPointsToleranceGrowsWithF(t *testing.T) {
	s := Shape{N: 2, F: 1048561}
	in := NewInputs(s, 7, -1, 1)
	feats, points, g := widen(in.Feats), widen(in.Points), widen(in.G)
	want := BackwardPoints(s, feats, points, g, nil)
	tol := PointsTolerance(s.F, feats, g)
	if tol.Floor <= 0 || !strings.Contains(tol.Why, "8F = 8388488 terms") {
		t.Fatalf("no floor derived from F: %+v", tol)
	}
	got := make([]float64, len(want))
	flipped := make([]float64, len(want))
	for n := 0; n < s.N; n++ {
		var uvw [3]float32
		for j := range 3 {
			uvw[j] = float32((Clamp(points[3*n+j]) + 1) / 2)
		}
		for j := range 3 {
			var acc, accFlip float32
			for f := 0; f < s.F; f++ {
				var c, cFlip float32
				for k := range 8 {
					prod := float32(1)
					for i := range 3 {
						bit := k >> (2 - i) & 1
						switch {
						case i == j && bit == 1:
						case i == j:
							prod = -prod
						case bit == 1:
							prod *= uvw[i]
						default:
							prod *= 1 - uvw[i]
						}
					}
					v := prod * in.Feats[n*8*s.F+k*s.F+f]
					c += v
					if k == 0 {
						v = -v
					}
					cFlip += v
				}
				acc += in.G[n*s.F+f] * c
				accFlip += in.G[n*s.F+f] * cFlip
			}
			got[3*n+j] = 0.5 * float64(acc)
			flipped[3*n+j] = 0.5 * float64(accFlip)
		}
	}
	r, old := check.Compare(got, want, tol), check.Compare(got, want, PointsTol)
	t.Logf("float32 model: %v; the fixed bound: %v", r, old)
	if old.OK {
		t.Errorf("the fixed float32 bound passed the model at F = %d (the case is meant to show it fail): %v", s.F, old)
	}
	if !r.OK {
		t.Errorf("a correct float32 accumulation failed the points tolerance at F = %d: %v", s.F, r.Err())
	}
	if r := check.Compare(make([]float64, len(want)), want, tol); r.OK {
		t.Errorf("zeros passed: %v", r)
	}
	if r := check.Compare(flipped, want, tol); r.OK {
		t.Errorf("a flipped corner passed: %v", r)
	}
}

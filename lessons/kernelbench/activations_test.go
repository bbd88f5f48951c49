package kernelbench

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	kb "github.com/cudalessons/cudalessons/helpers/kernelbench"
	"github.com/cudalessons/cudalessons/lessons/oneflow"
)

// elementwiseOp is op's entry and its problem at KernelBench's shape.
func elementwiseOp(t *testing.T, op kb.Op) (kb.Elementwise, kb.Problem) {
	t.Helper()
	e, ok := kb.ElementwiseOf(op)
	if !ok {
		t.Fatalf("no elementwise op %q", op)
	}
	for _, p := range kb.Problems() {
		if p.Op == op {
			return e, p
		}
	}
	t.Fatalf("no problem of op %q", op)
	return e, kb.Problem{}
}

var nan, inf = math.NaN(), math.Inf(1)

// The float64 references against values known independently of their formulas (the normal
// distribution's Phi for GELU, log 2, SELU's published constants), at the edges: softplus on both
// sides of its threshold 20, GELU far into the negative tail (where 1 + erf cancels), Swish where
// exp(-x) overflows, the infinities, and NaN, which every op keeps.
func TestElementwiseReferences(t *testing.T) {
	cases := map[kb.Op][][2]float64{
		kb.ReLU:      {{-1, 0}, {2, 2}, {-inf, 0}, {inf, inf}},
		kb.LeakyReLU: {{-2, -0.02}, {3, 3}, {-inf, -inf}},
		kb.Sigmoid:   {{0, 0.5}, {1, 0.7310585786300049}, {-800, 0}, {inf, 1}, {-inf, 0}},
		kb.Tanh:      {{0.5, 0.46211715726000974}, {-30, -1}, {inf, 1}},
		kb.Swish:     {{1, 0.7310585786300049}, {-1, -0.2689414213699951}, {-800, 0}, {-88.8, -2.415811102048870e-37}, {inf, inf}, {-inf, nan}},
		kb.GELU: {{1, 0.8413447460685429}, {-1, -0.15865525393145707}, {-10, -7.619853024160527e-23}, {0.5, 0.5 * 0.6914624612740131},
			{inf, inf}, {-inf, nan}},
		kb.SELU:        {{1, 1.0507009873554805}, {-1, -1.1113307378125628}, {-inf, -1.7580993408473766}},
		kb.HardSigmoid: {{-3, 0}, {3, 1}, {0, 0.5}, {1.5, 0.75}, {-4, 0}, {10, 1}, {inf, 1}, {-inf, 0}},
		kb.Softplus: {{0, math.Ln2}, {20, 20.000000002061153}, {20.5, 20.5}, {19, 19.000000005602796}, {-30, 9.357622968839737e-14},
			{inf, inf}, {-inf, 0}},
		kb.Softsign:  {{1, 0.5}, {-3, -0.75}, {inf, nan}},
		kb.ELU:       {{-1, -0.6321205588285577}, {2, 2}, {-inf, -1}},
		kb.HardTanh:  {{2, 1}, {-2, -1}, {0.3, 0.3}, {-inf, -1}},
		kb.ScalarMul: {{2, 6.28}, {-1, -3.14}},
	}
	for _, e := range kb.Elementwises() {
		_, p := elementwiseOp(t, e.Op)
		f, err := ElementwiseFunc(e, p)
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsNaN(f(nan)) {
			t.Errorf("%s(NaN) = %g: PyTorch keeps NaN", e.Op, f(nan))
		}
		cs, ok := cases[e.Op]
		if !ok {
			t.Errorf("no known values of %s", e.Op)
		}
		for _, c := range cs {
			got, want := f(c[0]), c[1]
			switch {
			case math.IsNaN(want) || math.IsInf(want, 0):
				if !(math.IsNaN(got) && math.IsNaN(want)) && got != want {
					t.Errorf("%s(%g) = %g, want %g", e.Op, c[0], got, want)
				}
			case math.Abs(got-want) > 1e-14*math.Abs(want):
				t.Errorf("%s(%g) = %.17g, want %.17g", e.Op, c[0], got, want)
			}
		}
	}
	// the reference of a trial's slices is the function of each element, the rows in order
	e, p := elementwiseOp(t, kb.GELU)
	p.Tensors[0].Shape, p.Out = []int{3, 5}, []int{3, 5}
	x := []float32{-3, -1, 0, 1, 3, 0.25, 0.5, 0.75, 0.125, 2, 9, 9, 9, 9, 9}
	got, err := Reference(p, [][]float32{x}, 2)
	f, _ := ElementwiseFunc(e, p)
	if err != nil || len(got) != 10 || got[3] != f(1) || got[9] != f(2) {
		t.Errorf("two rows of 5: %v %v", got, err)
	}
}

// The tolerances the derivation in roundings gives, per op; each is the element bound's worst case
// over KernelBench's inputs ([0, 1)), which no element bound there exceeds.
func TestElementwiseTolerances(t *testing.T) {
	want := map[kb.Op]float64{kb.ReLU: 0, kb.HardTanh: 0, kb.LeakyReLU: 2, kb.Sigmoid: 6, kb.Tanh: 4, kb.Swish: 7, kb.GELU: 5,
		kb.SELU: 6, kb.HardSigmoid: 2, kb.Softplus: 6, kb.Softsign: 2, kb.ELU: 3, kb.ScalarMul: 2}
	for _, e := range kb.Elementwises() {
		_, p := elementwiseOp(t, e.Op)
		tol := ElementwiseTolerance(e, p)
		if w := want[e.Op] * check.U32; tol.Rel != w || tol.RelL2 != w || (w == 0) != (tol.Abs == 0) {
			t.Errorf("%s: %+v, want rel %g", e.Op, tol, w)
		}
		f, _ := ElementwiseFunc(e, p)
		bound := ElementBound(e, p)
		for i := range 4096 {
			x := float64(float32(i) / 4096)
			y := f(x)
			if b := bound(x, y); b > tol.Abs+tol.Rel*math.Abs(y) {
				t.Errorf("%s at %g: element bound %g over the tolerance %g", e.Op, x, b, tol.Abs+tol.Rel*math.Abs(y))
				break
			}
		}
	}
}

// f32 rounds to float32 (an explicit conversion: Go may fuse a*b+c otherwise).
func f32(v float64) float32 { return float32(v) }

// emulate is unary.cu's formula for op in Go's float32 arithmetic, each library call correctly
// rounded (within half an ulp where CUDA's are within 1 or 2): a rounding model of the kernel.
func emulate(op kb.Op, x, a, b float32) float32 {
	exp := func(v float32) float32 { return f32(math.Exp(float64(v))) }
	switch op {
	case kb.ReLU:
		if x != x {
			return x
		}
		return max(x, 0)
	case kb.LeakyReLU:
		if x > 0 {
			return x
		}
		return x * a
	case kb.Sigmoid:
		return 1 / (1 + exp(-x))
	case kb.Tanh:
		return f32(math.Tanh(float64(x)))
	case kb.Swish:
		e := exp(-f32(math.Abs(float64(x))))
		s := 1 + e
		if x >= 0 {
			return x / s
		}
		return float32(x*e) / s
	case kb.GELU:
		return float32(0.5*x) * (1 + f32(math.Erf(float64(float32(x*f32(1/math.Sqrt2))))))
	case kb.SELU:
		if x > 0 {
			return b * x
		}
		return b * float32(a*f32(math.Expm1(float64(x))))
	case kb.HardSigmoid:
		if x != x {
			return x
		}
		return min(max(x+3, 0), 6) / 6
	case kb.Softplus:
		if x > a {
			return x
		}
		return f32(math.Log1p(float64(exp(x))))
	case kb.Softsign:
		return x / (1 + f32(math.Abs(float64(x))))
	case kb.ELU:
		if x > 0 {
			return x
		}
		return a * f32(math.Expm1(float64(x)))
	case kb.HardTanh:
		if x != x {
			return x
		}
		return min(max(x, a), b)
	case kb.ScalarMul:
		return x * a
	}
	return f32(nan)
}

// edgeValues are inputs where formulas go wrong: zeros, subnormals, float32's smallest normal, the
// switches (HardSigmoid's +-3, softplus's 20), exp's overflow near 88.7 and underflow near 103, the
// largest floats, the infinities and NaN; then random values of every scale.
func edgeValues(n int) []float32 {
	fm := float32(math.MaxFloat32)
	x := []float32{0, f32(math.Copysign(0, -1)), 1e-45, -1e-45, 1e-40, -1e-40, 0x1p-126, -0x1p-126, 1e-20, -1e-20, 1e-3, -1e-3,
		0.5, -0.5, 1, -1, 2.9999998, 3, 3.0000002, -2.9999998, -3, -3.0000002, 5, -5, 6, -6, 10, -10, 19.999998, 20, 20.000002, -20,
		30, -30, 50, -50, 87, -87, 88.7, -88.7, 88.8, -88.8, 90, -90, 100, -100, 104, -104, 1e4, -1e4, 1e30, -1e30, 3e38, -3e38,
		fm, -fm, f32(inf), f32(-inf), f32(nan)}
	r := rand.New(rand.NewPCG(37, 2))
	for len(x) < n {
		x = append(x, f32(r.NormFloat64()*math.Pow(10, float64(r.IntN(6))-2)))
	}
	return x[:n]
}

// judgeElementwise compares y = f(x) in float32 with the float64 reference under ElementBound,
// element by element (check.CompareBounds: NaN where the reference is NaN, the infinity where it
// overflows float32).
func judgeElementwise(e kb.Elementwise, p kb.Problem, x, y []float32) check.BoundResult {
	f, _ := ElementwiseFunc(e, p)
	bound := ElementBound(e, p)
	want, mag, bnd := make([]float64, len(x)), make([]float64, len(x)), make([]float64, len(x))
	for i, v := range x {
		want[i] = f(float64(v))
		mag[i] = math.Abs(want[i])
		bnd[i] = bound(float64(v), want[i])
	}
	return check.CompareBounds(y, want, mag, bnd)
}

// The rounding model of each formula (emulate) stays within its element bound on the edge values
// and 4000 random ones, NaN and the infinities included; the bound fails what is wrong: PyTorch's
// own Swish x / (1 + exp(-x)) at x = -88.8 (exp(88.8) overflows float32: 0 for a normal output),
// the tanh approximation of GELU, and a sigmoid rounded to 11 bits after the point.
func TestElementwiseRoundingModel(t *testing.T) {
	x := edgeValues(4096)
	for _, e := range kb.Elementwises() {
		_, p := elementwiseOp(t, e.Op)
		a, b, _ := e.KernelScalars(p)
		y := make([]float32, len(x))
		for i, v := range x {
			y[i] = emulate(e.Op, v, f32(a), f32(b))
		}
		if r := judgeElementwise(e, p, x, y); !r.OK {
			t.Errorf("%s: %+v (x = %g, y = %g)", e.Op, r, x[max(r.FirstBad, 0)], y[max(r.FirstBad, 0)])
		}
	}
	wrong := map[kb.Op]func(x float32) float32{
		kb.Swish: func(x float32) float32 { return x / (1 + f32(math.Exp(float64(-x)))) },
		kb.GELU: func(x float32) float32 {
			return f32(0.5 * float64(x) * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(float64(x)+0.044715*math.Pow(float64(x), 3)))))
		},
		kb.Sigmoid: func(x float32) float32 { return f32(math.Round(2048/(1+math.Exp(-float64(x)))) / 2048) },
	}
	for op, f := range wrong {
		e, p := elementwiseOp(t, op)
		y := make([]float32, len(x))
		for i, v := range x {
			y[i] = f(v)
		}
		if r := judgeElementwise(e, p, x, y); r.OK {
			t.Errorf("%s: a wrong formula passes the element bound", op)
		}
	}
}

// The plan from the device: on an H200 (4162 GB/s measured) at full occupancy 2 packs per thread
// (8.6 MB in flight for the 5 MB that 600 ns x 2 asks), on an H100 (2955 GB/s) 1; fewer resident
// blocks take more packs; the grid is one trip per thread; misaligned pointers take the pack-1
// kernel (lesson 02's grid rule);
// nonsense is refused.
func TestPlanUnary(t *testing.T) {
	dev := func(key string) gpu.DeviceInfo {
		prof, err := gpu.LookupProfile(key)
		if err != nil {
			t.Fatal(err)
		}
		return prof.Device()
	}
	h200, h100 := dev("h200"), dev("h100-sxm")
	full := func(int) (int, error) { return 8, nil }
	n := 4096 * 393216
	for _, c := range []struct {
		d      gpu.DeviceInfo
		gbps   float64
		blocks func(int) (int, error)
		ppt    int
	}{{h200, 4162, full, 2}, {h100, 2955, full, 1}, {h200, 4162, func(int) (int, error) { return 4, nil }, 3},
		{h200, 4162, func(int) (int, error) { return 1, nil }, MaxPacksPerThread}} {
		pl, err := PlanUnary(c.d, c.gbps, c.blocks, n, true)
		if err != nil {
			t.Fatal(err)
		}
		if pl.PPT != c.ppt || pl.Kernel != kb.UnaryKernel || pl.Grid != (n/4/c.ppt+kb.UnaryBlock-1)/kb.UnaryBlock || pl.NeedBytes != c.gbps*1200 {
			t.Errorf("%s at %g GB/s: %+v, want %d packs", c.d.Name, c.gbps, pl, c.ppt)
		}
		if c.ppt < MaxPacksPerThread && pl.InFlightBytes < pl.NeedBytes {
			t.Errorf("%s: %s", c.d.Name, pl)
		}
	}
	if pl, err := PlanUnary(h200, 4162, full, 1001, false); err != nil || pl.Kernel != kb.UnaryPack1Kernel || pl.Grid != oneflow.NumBlocks(h200, 1001) {
		t.Errorf("misaligned: %+v %v", pl, err)
	}
	if pl, err := PlanUnary(h200, 4162, full, 3, true); err != nil || pl.Grid != 1 {
		t.Errorf("3 elements (the tail alone): %+v %v", pl, err)
	}
	for _, bad := range []struct {
		gbps   float64
		n      int
		blocks func(int) (int, error)
	}{{0, n, full}, {4162, 0, full}, {4162, n, func(int) (int, error) { return 0, nil }}} {
		if _, err := PlanUnary(h200, bad.gbps, bad.blocks, bad.n, true); err == nil {
			t.Errorf("%g GB/s, %d elements: no error", bad.gbps, bad.n)
		}
	}
}

package kernelbench

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	kb "github.com/cudalessons/cudalessons/helpers/kernelbench"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons/oneflow"
)

// --- elementwise: KernelBench's activations and L1-5's A * s through helpers/kernelbench's
// unary.cu, lesson 02's step 3 with one input, planned from the device as lesson 02 teaches.

// The plan's figures (Little's law: bytes in flight = bandwidth x latency).
const (
	// DRAMLatencyNs is the DRAM latency lesson 02 takes for Little's law.
	DRAMLatencyNs = 600
	// InFlightMargin multiplies Little's law's figure: a thread's loads are outstanding only from
	// their issue to their arrival, and its arithmetic and stores sit between two trips' loads, so
	// the resident threads must hold more than one latency's worth of bytes.
	InFlightMargin = 2
	// MaxPacksPerThread bounds the packs a thread loads per trip (4 floats of registers each).
	MaxPacksPerThread = 4
)

// UnaryPlan is how unary.cu runs n elements on a device: the kernel, its packs per thread per trip,
// the cache hint, the grid, and the bytes in flight the plan needed and holds.
type UnaryPlan struct {
	Kernel    string
	PPT       int
	Streaming bool
	Grid      int
	// NeedBytes is the copy bandwidth times DRAMLatencyNs times InFlightMargin; InFlightBytes the
	// resident threads' loads (the driver's blocks per SM for the build, 16 B per pack).
	NeedBytes, InFlightBytes float64
}

// String says the plan in one line.
func (u UnaryPlan) String() string {
	return fmt.Sprintf("%s, %d pack(s)/thread, grid %d x %d: %s in flight for the %s that the copy bandwidth x %d ns x %d needs",
		u.Kernel, u.PPT, u.Grid, kb.UnaryBlock, gpu.FormatBytes(int64(u.InFlightBytes)), gpu.FormatBytes(int64(u.NeedBytes)), DRAMLatencyNs, InFlightMargin)
}

// PlanUnary plans unary.cu for n elements on device d of measured copy bandwidth copyGBps (GB/s):
// the fewest packs per thread (1 to MaxPacksPerThread) whose loads in flight, over every resident
// thread (blocksPerSM(ppt) blocks of UnaryBlock per SM, as the driver counts them for that build),
// reach copyGBps x DRAMLatencyNs x InFlightMargin; a grid of one trip per thread (every thread
// loads its packs once and leaves; the grid-stride loop only runs past 2^31 - 1 blocks). On the
// H200 (TestTuneUnary, ReLU over 4096 x 393216 floats, 2026-11-27) one trip per thread ran 4-5%
// faster than grids of 1 to 32 waves of resident blocks looping (3.04 against 3.20-3.25 ms at 2
// packs a thread), at every packs per thread from 1 to 8; lesson 02's grid rule (at most 32 waves)
// suits its 32M-element sweep, where the loop's trips are few. Plain loads: the streaming hint was
// 2-3% slower at every grid. Pointers that are not 16-byte aligned (aligned false) take the pack-1
// kernel (lesson 02's grid rule).
func PlanUnary(d gpu.DeviceInfo, copyGBps float64, blocksPerSM func(ppt int) (int, error), n int, aligned bool) (UnaryPlan, error) {
	if n < 1 {
		return UnaryPlan{}, fmt.Errorf("unary: %d elements; at least 1", n)
	}
	if copyGBps <= 0 || d.SMs < 1 {
		return UnaryPlan{}, fmt.Errorf("unary: no copy bandwidth (%g GB/s) or SM count (%d) of %s to plan from", copyGBps, d.SMs, d.Name)
	}
	p := UnaryPlan{NeedBytes: copyGBps * DRAMLatencyNs * InFlightMargin} // GB/s x ns = bytes
	if !aligned {
		p.Kernel, p.PPT, p.Grid = kb.UnaryPack1Kernel, 1, oneflow.NumBlocks(d, n)
		return p, nil
	}
	p.Kernel = kb.UnaryKernel
	for ppt := 1; ppt <= MaxPacksPerThread; ppt++ {
		blocks, err := blocksPerSM(ppt)
		if err != nil {
			return UnaryPlan{}, err
		}
		if blocks < 1 {
			return UnaryPlan{}, fmt.Errorf("unary: the build with %d packs per thread fits no block of %d threads on an SM of %s", ppt, kb.UnaryBlock, d.Name)
		}
		p.PPT, p.InFlightBytes = ppt, float64(d.SMs*blocks*kb.UnaryBlock*ppt*16)
		if p.InFlightBytes >= p.NeedBytes {
			break
		}
	}
	units := gpu.CeilDiv(gpu.CeilDiv(n, 4), p.PPT)
	p.Grid = min(gpu.CeilDiv(max(units, 1), kb.UnaryBlock), math.MaxInt32)
	return p, nil
}

// unaryLauncher compiles unary.cu for op e, plans it on env's GPU for x and y of n elements, and
// returns the launch and the plan.
func unaryLauncher(env *lab.Env, e kb.Elementwise, p kb.Problem, x, y *gpu.Buffer[float32], n int) (func() error, UnaryPlan, error) {
	if x.Len() < n || y.Len() < n {
		return nil, UnaryPlan{}, fmt.Errorf("%s: buffers of %d and %d elements for %d", p.ID(), x.Len(), y.Len(), n)
	}
	a, b, err := e.KernelScalars(p)
	if err != nil {
		return nil, UnaryPlan{}, err
	}
	if e.Op == kb.Softplus && kb.SoftplusBeta != 1 {
		return nil, UnaryPlan{}, fmt.Errorf("%s: unary.cu's softplus takes beta 1, not %g", p.ID(), kb.SoftplusBeta)
	}
	kernels := map[int]*gpu.Kernel{}
	build := func(ppt int) (*gpu.Kernel, error) {
		if k, ok := kernels[ppt]; ok {
			return k, nil
		}
		name := kb.UnaryKernel
		if ppt == 0 {
			name = kb.UnaryPack1Kernel
		}
		prog, err := env.BuildWith(kb.Unary(), compile.Options{Defines: kb.UnaryDefines(e, max(ppt, 1), false)}, name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.ID(), err)
		}
		k, err := prog.Kernel(name)
		kernels[ppt] = k
		return k, err
	}
	d := env.Session.Device
	plan, err := PlanUnary(d, env.Receipt.CopyGBps, func(ppt int) (int, error) {
		k, err := build(ppt)
		if err != nil {
			return 0, err
		}
		occ, err := k.Occupancy(kb.UnaryBlock, 0)
		return occ.BlocksPerSM, err
	}, n, gpu.Aligned(16, x, y))
	if err != nil {
		return nil, UnaryPlan{}, fmt.Errorf("%s: %w", p.ID(), err)
	}
	ppt := plan.PPT
	if plan.Kernel == kb.UnaryPack1Kernel {
		ppt = 0
	}
	k, err := build(ppt)
	if err != nil {
		return nil, UnaryPlan{}, err
	}
	cfg := gpu.Config{Grid: gpu.D1(plan.Grid), Block: gpu.D1(kb.UnaryBlock)}
	fa, fb, nn := float32(a), float32(b), int64(n)
	return func() error { return k.Launch(cfg, x, y, nn, fa, fb) }, plan, nil
}

func (b backend) openElementwise(p kb.Problem, e kb.Elementwise) (kb.Impl, error) {
	m := newImpl(b.env, p)
	if err := m.allocTensors(); err != nil {
		return m.fail(err)
	}
	n := p.OutLen()
	run, plan, err := unaryLauncher(b.env, e, p, m.tensors[0], m.out, n)
	if err != nil {
		return m.fail(err)
	}
	m.add(kb.Variant{Name: fmt.Sprintf("unary.cu %s, %d pack(s)/thread", e.Act, plan.PPT), DType: "float32", Tol: ElementwiseTolerance(e, p),
		Note: "lesson 02's step 3 with one input: " + plan.String()}, run, nil)
	m.work = bench.Work{Bytes: 8 * float64(n), FLOPs: float64(n)}
	return m, nil
}

// ElementwiseFunc is the float64 value of op e at x with p's scalars, by PyTorch's definition:
// softplus is x itself above its threshold, GELU the erf form (evaluated through erfc, accurate
// where 1 + erf cancels), Swish x / (1 + exp(-x)) (NaN at -Inf, as x * sigmoid(x) is), and a NaN
// gives NaN.
func ElementwiseFunc(e kb.Elementwise, p kb.Problem) (func(x float64) float64, error) {
	a, b, err := e.KernelScalars(p)
	if err != nil {
		return nil, err
	}
	switch e.Op {
	case kb.ReLU:
		return func(x float64) float64 {
			if x > 0 || math.IsNaN(x) {
				return x
			}
			return 0
		}, nil
	case kb.LeakyReLU:
		return func(x float64) float64 {
			if x > 0 {
				return x
			}
			return x * a
		}, nil
	case kb.Sigmoid:
		return func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }, nil
	case kb.Tanh:
		return math.Tanh, nil
	case kb.Swish:
		return func(x float64) float64 { return x / (1 + math.Exp(-x)) }, nil
	case kb.GELU:
		return func(x float64) float64 { return 0.5 * x * math.Erfc(-x/math.Sqrt2) }, nil
	case kb.SELU, kb.ELU:
		scale := 1.0
		if e.Op == kb.SELU {
			scale = b
		}
		return func(x float64) float64 {
			if x > 0 {
				return scale * x
			}
			return scale * a * math.Expm1(x)
		}, nil
	case kb.HardSigmoid:
		return func(x float64) float64 { return math.Min(math.Max(x+3, 0), 6) / 6 }, nil
	case kb.Softplus:
		return func(x float64) float64 {
			if x*kb.SoftplusBeta > a {
				return x
			}
			return math.Log1p(math.Exp(x*kb.SoftplusBeta)) / kb.SoftplusBeta
		}, nil
	case kb.Softsign:
		return func(x float64) float64 { return x / (1 + math.Abs(x)) }, nil
	case kb.HardTanh:
		return func(x float64) float64 { return math.Min(math.Max(x, a), b) }, nil
	case kb.ScalarMul:
		return func(x float64) float64 { return x * a }, nil
	}
	return nil, fmt.Errorf("kernelbench %s: no float64 reference for %q", p.ID(), e.Op)
}

// The ulp errors of the CUDA math library's float32 functions (the CUDA C++ Programming Guide's
// table of single-precision functions, default flags: no fast math, IEEE division): expf, tanhf
// and erff within 2 ulp, expm1f and log1pf within 1 (the guide's bounds come from extensive, not
// exhaustive, tests; the GPU edge-value test holds the kernel to them). One ulp of a float32 result
// is at most 2^-23 of it, 2u in the unit roundoff u = 2^-24; an IEEE operation rounds once, within u.
const (
	ulpExpf   = 2
	ulpTanhf  = 2
	ulpErff   = 2
	ulpExpm1f = 1
	ulpLog1pf = 1
)

// roundings is the relative error of unary.cu's formula for op e in units of u = 2^-24, to first
// order, and whether the formula is exact (no rounding at all): each library call counts 2u per
// ulp, each IEEE operation u, each scalar that float32 cannot hold exactly u (its conversion).
//
//	ReLU, HardTanh  comparisons only: exact (HardTanh's bounds add u each where float32 rounds them)
//	LeakyReLU       x * slope: the slope's rounding + the product = 2u
//	Sigmoid         1 / (1 + expf(-x)): expf 4u, the sum u (its relative error is at most expf's),
//	                the division u = 6u
//	Tanh            tanhf 4u
//	Swish           x >= 0: x / (1 + expf(-x)) = 6u as Sigmoid; x < 0: x * e / (1 + e), e = expf(x):
//	                e's 4u enters e / (1 + e) at most once, + the product, the sum, the division = 7u
//	GELU            see geluBound: 5u of the output for x >= 0
//	SELU            scale * (alpha * expm1f(x)): expm1f 2u, two constants' roundings, two products = 6u
//	HardSigmoid     (x + 3) / 6: the sum and the division = 2u
//	Softplus        log1pf(expf(x)): expf's 4u passes log1p at most unchanged in relative terms
//	                (E / ((1 + E) log1p(E)) <= 1), + log1pf 2u = 6u; above the threshold x itself
//	Softsign        x / (1 + |x|): the sum and the division = 2u
//	ELU             alpha * expm1f(x): expm1f 2u + the product u (+ alpha's rounding) = 3u
//	A * s           s's rounding + the product = 2u
func roundings(e kb.Elementwise, p kb.Problem) (k float64, exact bool) {
	a, b, _ := e.KernelScalars(p)
	rounded := func(v float64) float64 {
		if float64(float32(v)) != v {
			return 1
		}
		return 0
	}
	switch e.Op {
	case kb.ReLU:
		return 0, true
	case kb.HardTanh:
		k = rounded(a) + rounded(b)
		return k, k == 0
	case kb.LeakyReLU, kb.ScalarMul:
		return rounded(a) + 1, false
	case kb.Sigmoid:
		return 2*ulpExpf + 2, false
	case kb.Tanh:
		return 2 * ulpTanhf, false
	case kb.Swish:
		return 2*ulpExpf + 3, false
	case kb.GELU:
		return 5, false
	case kb.SELU:
		return 2*ulpExpm1f + rounded(a) + rounded(b) + 2, false
	case kb.HardSigmoid, kb.Softsign:
		return 2, false
	case kb.Softplus:
		return 2*ulpExpf + 2*ulpLog1pf, false
	case kb.ELU:
		return 2*ulpExpm1f + 1 + rounded(a), false
	}
	return math.Inf(1), false
}

// tinyFloor is float32's smallest normal, 2^-126: below it float32 has no relative precision (the
// subnormals' spacing is fixed) and a library function may underflow to 0, so an output of the
// rounding formulas may be that far off in absolute terms.
const tinyFloor = 0x1p-126

// ElementBound is the absolute error unary.cu's formula for op e may make at input x whose exact
// output is y: roundings(e) u |y|, plus tinyFloor for the formulas that round; for GELU,
// geluBound.
func ElementBound(e kb.Elementwise, p kb.Problem) func(x, y float64) float64 {
	k, exact := roundings(e, p)
	if exact {
		return func(_, y float64) float64 { return 0 }
	}
	if e.Op == kb.GELU {
		return geluBound
	}
	return func(_, y float64) float64 { return k*check.U32*math.Abs(y) + tinyFloor }
}

// geluBound is the absolute error of 0.5f * x * (1 + erff(x * c)), c = 1/sqrt 2 rounded: the
// argument carries c's rounding and the product's (2u), which erf passes on at most unchanged in
// relative terms (z erf'(z) / erf(z) <= 1), erff adds 4u, so erf is off by 6u |erf|; the sum 1 + erf
// rounds (u), 0.5f * x is exact, the last product rounds (u):
//
//	|error| <= 0.5 |x| 6u |erf(x / sqrt 2)| + 2u |y|  = 3u |x| |erf| + 2u |y|
//
// For x >= 0 that is at most 5u |y| (erf / (1 + erf) <= 1/2). For x < 0 the sum 1 + erf cancels
// (PyTorch's formula shares it): the first term stays, absolute, while y falls towards 0.
func geluBound(x, y float64) float64 {
	return 3*check.U32*math.Abs(x)*math.Abs(math.Erf(x/math.Sqrt2)) + 2*check.U32*math.Abs(y) + tinyFloor
}

// ElementwiseTolerance is the float64 check of op e on KernelBench's inputs (torch.rand, [0, 1)):
// roundings(e) u relative, for each element and for the relative L2 error, and tinyFloor absolute
// where the formula rounds; exact formulas must match exactly.
func ElementwiseTolerance(e kb.Elementwise, p kb.Problem) check.Tolerance {
	k, exact := roundings(e, p)
	if exact {
		return check.Tolerance{Name: "fp32-exact", Why: fmt.Sprintf("%s only compares and selects: the float32 output is exact", e.Op)}
	}
	rel := k * check.U32
	return check.Tolerance{Name: fmt.Sprintf("fp32 %gu", k), RelL2: rel, Rel: rel, Abs: tinyFloor,
		Why: fmt.Sprintf("unary.cu's %s formula rounds to at most %g u (u = 2^-24) of its output, to first order, for x >= 0; "+
			"CUDA's expf, tanhf, erff within 2 ulp, expm1f, log1pf within 1; 2^-126 absolute below float32's normal range", e.Op, k)}
}

// elementwiseReference is the float64 output of n rows of an elementwise problem (t[0] cut to them).
func elementwiseReference(p kb.Problem, e kb.Elementwise, t [][]float32, n int) ([]float64, error) {
	f, err := ElementwiseFunc(e, p)
	if err != nil {
		return nil, err
	}
	x := t[0][:n*p.OutPer()]
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = f(float64(v))
	}
	return out, nil
}

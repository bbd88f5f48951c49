// Package kernelbench runs KernelBench's problems through the lessons' kernels: the binding of
// helpers/kernelbench (the problems, the run, the verdicts, the tables) to lesson 03's matrix
// product, lesson 04's softmax and layer norm, lesson 05's convolutions and lesson 02's elementwise
// loop (helpers/kernelbench's unary.cu, for the activations), and the float64 references of the
// lessons. cmd/kernelbench is its command.
//
//	env, _ := lab.Open()
//	rep, err := kernelbench.Run(env, kb.Problems(), kb.Trials, func(line string) { fmt.Println(line) }, nil)
//	for _, t := range kb.Tables(rep) {
//		t.Display()
//	}
package kernelbench

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	kb "github.com/cudalessons/cudalessons/helpers/kernelbench"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/parallel"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/lessons/conv"
	"github.com/cudalessons/cudalessons/lessons/hopper"
	"github.com/cudalessons/cudalessons/lessons/matmul"
	"github.com/cudalessons/cudalessons/lessons/reduce"
)

// reserve is device memory kept free beside a problem's tensors and its kernels' scratch: loaded
// modules, the L2 flush buffer, a step's small work buffers.
const reserve = 256 << 20

// backend runs the problems through the lessons' kernels (kernelbench.Backend).
type backend struct {
	env *lab.Env
	// forceSplit runs lesson 08's split on every product of the matmul family the split's plan
	// takes, whatever its size (the tests' small shapes; Hopper only).
	forceSplit bool
}

// NewBackend is the helpers/kernelbench Backend of the lessons' kernels on env's GPU.
func NewBackend(env *lab.Env) kb.Backend { return backend{env: env} }

// Memory implements kernelbench.Backend: the problem's tensors, the scratch of the step that will
// run, and the reserve, against the device's free memory.
func (b backend) Memory(p kb.Problem) (need, free int64, err error) {
	free, _, err = b.env.Session.MemInfo()
	if err != nil {
		return 0, 0, err
	}
	need = p.TensorBytes() + reserve
	d := b.env.Session.Device
	if _, _, _, _, ok := kb.MatMulFamily(p.Op); ok && b.viaFamily(p) {
		return p.TensorBytes() + b.familyMemory(p, d) + reserve, free, nil
	}
	switch p.Op {
	case kb.MatMul:
		s := matmulShape(p)
		need = matmul.DeviceBytes(s, matmulStep(p, d).Split || hopperSplit(p, d)) + reserve
	case kb.LayerNorm:
		N, M := lnShape(p)
		need += reduce.LayerNormScratchBytes(d, N, M)
	case kb.Conv2d, kb.Conv2dReLUBias:
		s := convShape(p)
		if !p.Conv.Bias {
			need += 4 * int64(s.K) // the zero bias the kernels read
		}
		for _, st := range []hopper.Step{hopper.ConvSplit, hopper.ConvFitted} {
			if pl, ok := hopperConv(st, s, d); ok {
				need += pl.CopyBytes(st, s) // the step's NHWC copy and filters
			}
		}
	}
	return need, free, nil
}

// Open implements kernelbench.Backend.
func (b backend) Open(p kb.Problem) (kb.Impl, error) {
	if e, ok := kb.ElementwiseOf(p.Op); ok {
		return b.openElementwise(p, e)
	}
	switch p.Op {
	case kb.MatMul, kb.BatchedMatMul, kb.MatMulTA, kb.MatMulTB, kb.MatMulTT, kb.GemmMulLeakyReLU, kb.GemmReLUDivide, kb.GemmAddReLU:
		return b.openMatMulOrFamily(p)
	case kb.Softmax:
		return b.openSoftmax(p)
	case kb.LayerNorm:
		return b.openLayerNorm(p)
	case kb.Conv2d, kb.Conv2dReLUBias:
		return b.openConv(p)
	}
	if kb.IsReduction(p.Op) {
		return b.openReduction(p)
	}
	return nil, fmt.Errorf("kernelbench %s: no lesson covers op %q", p.ID(), p.Op)
}

// impl is one problem on the device: its tensors (nil where the device keeps no copy), the
// output, and per variant the launch and a check after it.
type impl struct {
	env      *lab.Env
	p        kb.Problem
	tensors  []*gpu.Buffer[float32]
	out      *gpu.Buffer[float32]
	variants []kb.Variant
	runs     []func() error
	verify   []func() error
	work     bench.Work
	frees    []func()
	// loaded runs after every Load (a parameter's layout made once, as a model would keep it).
	loaded []func() error
}

// Variants implements kernelbench.Impl.
func (m *impl) Variants() []kb.Variant { return m.variants }

func (m *impl) add(v kb.Variant, run, verify func() error) {
	m.variants, m.runs, m.verify = append(m.variants, v), append(m.runs, run), append(m.verify, verify)
}

// Load implements kernelbench.Impl.
func (m *impl) Load(tensors [][]float32) error {
	for i, b := range m.tensors {
		if b == nil {
			continue
		}
		if err := b.CopyFromHost(tensors[i]); err != nil {
			return fmt.Errorf("%s: %w", m.p.Tensors[i].Name, err)
		}
	}
	for _, f := range m.loaded {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// Output implements kernelbench.Impl: the output NaN-poisoned, one run, the slices copied back and
// the whole output's NaN and Inf counted on the GPU.
func (m *impl) Output(v int, idx []int) ([]float32, int, error) {
	if err := m.out.Poison(); err != nil {
		return nil, 0, err
	}
	if err := m.runs[v](); err != nil {
		return nil, 0, err
	}
	if err := m.env.Session.Synchronize(); err != nil {
		return nil, 0, err
	}
	if f := m.verify[v]; f != nil {
		if err := f(); err != nil {
			return nil, 0, err
		}
	}
	per := m.p.OutPer()
	got := make([]float32, 0, per*len(idx))
	for _, b := range idx {
		view, err := m.out.View(b*per, per)
		if err != nil {
			return nil, 0, err
		}
		h, err := view.ToHost()
		if err != nil {
			return nil, 0, err
		}
		got = append(got, h...)
	}
	bad, err := reduce.CountNonFinite(m.env, m.out, m.out.Len())
	return got, int(bad), err
}

// Measure implements kernelbench.Impl with the lab's method (lab.Env.Measure).
func (m *impl) Measure(v int) (record.Record, error) {
	st := m.variants[v]
	rec := record.Record{Lesson: "kernelbench", Case: m.p.ID(), Variant: st.Name, Kind: "kernel", DType: st.DType, Shape: m.p.ShapeString(),
		Tol: st.Tol.Name, Device: m.env.Receipt.Device.Name, Date: m.env.Receipt.Date}
	return m.env.Measure(rec, m.work, m.runs[v])
}

// Free implements kernelbench.Impl.
func (m *impl) Free() {
	for i := len(m.frees) - 1; i >= 0; i-- {
		m.frees[i]()
	}
	m.frees = nil
}

// alloc allocates a device buffer the impl frees.
func (m *impl) alloc(what string, n int) (*gpu.Buffer[float32], error) {
	buf, err := gpu.Alloc[float32](m.env.Session, n)
	if err != nil {
		return nil, fmt.Errorf("%s: allocating %s: %w", m.p.ID(), what, err)
	}
	m.frees = append(m.frees, func() { buf.Free() })
	return buf, nil
}

// allocTensors allocates every tensor of the problem and the output.
func (m *impl) allocTensors() error {
	m.tensors = make([]*gpu.Buffer[float32], len(m.p.Tensors))
	for i, t := range m.p.Tensors {
		b, err := m.alloc(t.Name, t.Len())
		if err != nil {
			return err
		}
		m.tensors[i] = b
	}
	out, err := m.alloc("the output", m.p.OutLen())
	m.out = out
	return err
}

func newImpl(env *lab.Env, p kb.Problem) *impl { return &impl{env: env, p: p} }

// fail frees what an open allocated and returns err.
func (m *impl) fail(err error) (kb.Impl, error) {
	m.Free()
	return nil, err
}

// --- matmul: lesson 03's Problem and Launcher, the step Pick chooses; on Hopper, lesson 08's split
// where hopper.Multiply would run it.

func matmulShape(p kb.Problem) matmul.Shape {
	a, b := p.Tensors[0].Shape, p.Tensors[1].Shape
	return matmul.Shape{M: a[0], K: a[1], N: b[1]}
}

// matmulStep is the fastest float32-accurate step for the shape (matmul.Pick). torch.rand's values
// lie in [0, 1), far below fp16's largest, so the fp16 split may run.
func matmulStep(p kb.Problem, d gpu.DeviceInfo) matmul.Step {
	fp16Safe := p.Tensors[0].Dist == kb.Rand && p.Tensors[1].Dist == kb.Rand
	return matmul.Pick(matmulShape(p), d, true, fp16Safe)
}

// hopperSplit reports whether the product runs lesson 08's split: on a Hopper GPU, from
// hopper.SplitMinMACs multiply-adds up, on inputs in fp16's range (torch.rand's).
func hopperSplit(p kb.Problem, d gpu.DeviceInfo) bool {
	fp16Safe := p.Tensors[0].Dist == kb.Rand && p.Tensors[1].Dist == kb.Rand
	return fp16Safe && hopper.NeedHopper("", d) == nil && (hopper.Multiplier{MinMACs: hopper.SplitMinMACs}).UsesSplit(matmulShape(p), d)
}

func (b backend) openMatMul(p kb.Problem) (kb.Impl, error) {
	m := newImpl(b.env, p)
	s := matmulShape(p)
	st := matmulStep(p, b.env.Session.Device)
	if hopperSplit(p, b.env.Session.Device) {
		return b.openHopperMatMul(p, m, s)
	}
	// NewProblem allocates A, B and C and draws the lesson's inputs, which Load overwrites with the
	// trial's; its sample is empty (0 rows, columns, elements) at KernelBench's shapes.
	prob, err := matmul.NewProblem(b.env, s, 1, 0, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.ID(), err)
	}
	prob.A, prob.B = nil, nil
	m.frees = append(m.frees, prob.Free)
	m.tensors, m.out = []*gpu.Buffer[float32]{prob.Ad, prob.Bd}, prob.Cd
	run, _, _, err := prob.Launcher(st, "")
	if err != nil {
		return m.fail(fmt.Errorf("%s, matmul %s: %w", p.ID(), st.Name, err))
	}
	v := kb.Variant{Name: st.Name, DType: st.DType, Tol: matmul.Tolerance("float32", s.K)}
	if own := st.Tol(s.K); own.Name != v.Tol.Name {
		v.Own = &own
	}
	m.add(v, run, nil)
	m.work = s.Work()
	return m, nil
}

// openHopperMatMul runs the product with lesson 08's split (hopper.Split) over lesson 03's buffers.
func (b backend) openHopperMatMul(p kb.Problem, m *impl, s matmul.Shape) (kb.Impl, error) {
	prob, err := matmul.NewProblem(b.env, s, 1, 0, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.ID(), err)
	}
	prob.A, prob.B = nil, nil
	hp := hopper.AccurateFrom(b.env, prob)
	m.frees = append(m.frees, hp.Free)
	m.tensors, m.out = []*gpu.Buffer[float32]{prob.Ad, prob.Bd}, prob.Cd
	run, _, _, err := hp.Launcher(hopper.Split, "")
	if err != nil {
		return m.fail(fmt.Errorf("%s, matmul %s: %w", p.ID(), hopper.Split.Name, err))
	}
	own := hp.Tol(hopper.Split)
	m.add(kb.Variant{Name: hopper.Lesson08Prefix + hopper.Split.Name, DType: hopper.SplitDType, Tol: matmul.Tolerance("float32", s.K), Own: &own}, run, nil)
	m.work = s.Work()
	return m, nil
}

// --- softmax: lesson 04's SoftmaxLauncher, the step PickSoftmax chooses.

func (b backend) openSoftmax(p kb.Problem) (kb.Impl, error) {
	m := newImpl(b.env, p)
	if err := m.allocTensors(); err != nil {
		return m.fail(err)
	}
	rows, cols := p.Out[0], p.Out[1]
	run, step, verify, free, err := reduce.SoftmaxLauncher(b.env, m.tensors[0], m.out, rows, cols)
	if err != nil {
		return m.fail(fmt.Errorf("%s, softmax: %w", p.ID(), err))
	}
	if free != nil {
		m.frees = append(m.frees, free)
	}
	m.add(kb.Variant{Name: step, DType: "float32", Tol: reduce.SoftmaxTolerance(reduce.F32, nil)}, run, verify)
	m.work = reduce.SoftmaxWork(reduce.F32, rows, cols)
	return m, nil
}

// --- layer norm: lesson 04's forward step for (N, M) (ForwardStep), over our buffers.

func lnShape(p kb.Problem) (N, M int) {
	x := p.Tensors[0].Shape
	N, M = 1, 1
	for i, d := range x {
		if i < len(x)-p.NormDims {
			N *= d
		} else {
			M *= d
		}
	}
	return N, M
}

func (b backend) openLayerNorm(p kb.Problem) (kb.Impl, error) {
	m := newImpl(b.env, p)
	if err := m.allocTensors(); err != nil {
		return m.fail(err)
	}
	if p.Eps != reduce.LNEps {
		return m.fail(fmt.Errorf("%s: layer norm with eps %g; the lesson's kernels take %g", p.ID(), p.Eps, reduce.LNEps))
	}
	N, M := lnShape(p)
	w, _ := tensorIndex(p, "ln.weight")
	bi, _ := tensorIndex(p, "ln.bias")
	ln, err := reduce.NewLayerNormOn(b.env, m.tensors[0], m.tensors[w], m.tensors[bi], m.out, N, M)
	if err != nil {
		return m.fail(fmt.Errorf("%s: %w", p.ID(), err))
	}
	m.frees = append(m.frees, ln.Free)
	m.add(kb.Variant{Name: ln.Step, DType: "float32", Tol: check.FP32}, ln.Run, ln.Verify)
	m.work = reduce.LNWork(N, M)
	return m, nil
}

func tensorIndex(p kb.Problem, name string) (int, bool) {
	for i, t := range p.Tensors {
		if t.Name == name {
			return i, true
		}
	}
	return -1, false
}

// --- conv: lesson 05's Problem over our buffers, its fastest float32 step and its fastest FP16 step
// that take the shape; on a Hopper GPU lesson 08's step 7 fitted to the layer (a strided one by
// space to depth) in its float32-accurate split and in FP16 instead. The level-2 problem runs its
// ReLU and bias in the conv's epilogue (lesson 08's, or lesson 05's EPILOGUE2 build), and adds
// relu_bias.cu after a step that has neither.

func convShape(p kb.Problem) conv.Shape {
	n, c, h, w, k, r := p.ConvShape()
	return conv.Shape{N: n, C: c, H: h, W: w, K: k, R: r, S: p.Conv.Stride, P: p.Conv.Padding}
}

// hopperConv reports whether lesson 08's conv step st takes the layer on d (a Hopper GPU), with the
// plan: then it replaces lesson 05's step of its precision.
func hopperConv(st hopper.Step, s conv.Shape, d gpu.DeviceInfo) (hopper.ConvPlan, bool) {
	pl, err := st.PlanConv(s, d)
	return pl, err == nil
}

func (b backend) openConv(p kb.Problem) (kb.Impl, error) {
	m := newImpl(b.env, p)
	if err := m.allocTensors(); err != nil {
		return m.fail(err)
	}
	s := convShape(p)
	prefix := p.ConvPrefix()
	wi, _ := tensorIndex(p, prefix+"weight")
	bias, ok := tensorIndex(p, prefix+"bias")
	var biasBuf *gpu.Buffer[float32]
	if ok {
		biasBuf = m.tensors[bias]
	} else { // no bias: the kernels add zeros
		zb, err := m.alloc("a zero bias", s.K)
		if err != nil {
			return m.fail(err)
		}
		if err := zb.Zero(); err != nil {
			return m.fail(err)
		}
		biasBuf = zb
	}
	prob, err := conv.NewProblemOn(b.env, s, m.tensors[0], m.tensors[wi], biasBuf, m.out)
	if err != nil {
		return m.fail(fmt.Errorf("%s: %w", p.ID(), err))
	}
	m.frees = append(m.frees, prob.Free)
	var tail func() error
	var extra *gpu.Buffer[float32] // the level-2 problem's bias after the ReLU
	if p.Op == kb.Conv2dReLUBias {
		if tail, err = b.reluBias(m, s, p); err != nil {
			return m.fail(err)
		}
		bi, _ := tensorIndex(p, "bias") // reluBias found it
		extra = m.tensors[bi]
	}
	d := b.env.Session.Device
	var hc *hopper.ConvProblem // lesson 08's view of the problem, made once for both of its steps
	for _, dtype := range []string{conv.F32, conv.FP16} {
		var run func() error
		var v kb.Variant
		fused := false
		hst := hopper.ConvSplit // the float32-accurate step
		if dtype == conv.FP16 {
			hst = hopper.ConvFitted
		}
		if _, ok := hopperConv(hst, s, d); ok {
			if hc == nil {
				hc = hopper.ConvFrom(b.env, prob)
				m.frees = append(m.frees, hc.Free)
				if extra != nil {
					if err := hc.SetEpilogue(true, extra); err != nil {
						return m.fail(fmt.Errorf("%s: %w", p.ID(), err))
					}
				}
			}
			fused = extra != nil
			if run, _, _, err = hc.Launcher(hst, ""); err != nil {
				return m.fail(fmt.Errorf("%s, conv %s: %w", p.ID(), hst.Name, err))
			}
			v = kb.Variant{Name: hopper.Lesson08Prefix + hst.Name, DType: hst.Products, Tol: conv.Tol(conv.F32)}
			if dtype == conv.FP16 {
				own := conv.Tol(conv.FP16)
				v.Own = &own
			}
		} else {
			st, ok := conv.FastestStep(s, d, dtype)
			if !ok {
				continue
			}
			fused = extra != nil && st.Epilogue // its EPILOGUE2 build, captured by the launcher
			if fused {
				err = prob.SetEpilogue(true, extra)
			} else {
				err = prob.SetEpilogue(false, nil)
			}
			if err != nil {
				return m.fail(fmt.Errorf("%s: %w", p.ID(), err))
			}
			if run, _, _, err = prob.Launcher(st, ""); err != nil {
				return m.fail(fmt.Errorf("%s, conv %s: %w", p.ID(), st.Name, err))
			}
			v = kb.Variant{Name: st.Name, DType: st.DType, Tol: conv.Tol(conv.F32)}
			if st.Tol.Name != v.Tol.Name {
				own := st.Tol
				v.Own = &own
			}
		}
		switch {
		case fused:
			v.Name += ", ReLU and bias in its epilogue"
			v.Note = "one pass over y: the conv's epilogue adds its bias, takes the ReLU and adds the second bias"
		case tail != nil:
			convRun := run
			run = func() error {
				if err := convRun(); err != nil {
					return err
				}
				return tail()
			}
			v.Name += " + ReLU/bias pass"
			v.Note = "the conv step, then relu_bias.cu over y in place (lesson 05's fused steps end in a max pool)"
		}
		m.add(v, run, nil)
	}
	if len(m.variants) == 0 {
		return m.fail(fmt.Errorf("%s: no conv step of lesson 05 takes %v on %s", p.ID(), s, d.Name))
	}
	m.work = conv.Work(s)
	return m, nil
}

// reluBias compiles relu_bias.cu and returns the launch of y = relu(y) + bias[k] over the output.
func (b backend) reluBias(m *impl, s conv.Shape, p kb.Problem) (func() error, error) {
	bi, ok := tensorIndex(p, "bias")
	if !ok {
		return nil, fmt.Errorf("%s: no bias tensor", p.ID())
	}
	prog, err := b.env.Build(kb.ReLUBias(), kb.ReLUBiasKernel)
	if err != nil {
		return nil, err
	}
	k, err := prog.Kernel(kb.ReLUBiasKernel)
	if err != nil {
		return nil, err
	}
	n := m.out.Len()
	cfg := gpu.Config{Grid: gpu.D1(gpu.WavesGrid(b.env.Session.Device, n, 256, 4)), Block: gpu.D1(256)}
	out, bias, hw := m.out, m.tensors[bi], int32(s.OH()*s.OW())
	return func() error { return k.Launch(cfg, out, bias, int64(n), hw, int32(s.K)) }, nil
}

// Reference implements kernelbench.Backend with the lessons' float64 references, on n batch
// slices (the first tensor cut to them).
func (b backend) Reference(p kb.Problem, t [][]float32, n int) ([]float64, error) {
	return Reference(p, t, n)
}

// Reference is the float64 output of n batch slices of p: lesson 03's Reference, lesson 04's
// SoftmaxRow and LayerNormSample, lesson 05's ConvAt (then the ReLU and the bias of the level-2
// problem), ElementwiseFunc for the elementwise problems, the reductions' and norms' formulas
// (reductionReference).
func Reference(p kb.Problem, t [][]float32, n int) ([]float64, error) {
	if e, ok := kb.ElementwiseOf(p.Op); ok {
		return elementwiseReference(p, e, t, n)
	}
	if kb.IsReduction(p.Op) {
		return reductionReference(p, t, n)
	}
	per := p.OutPer()
	out := make([]float64, n*per)
	switch p.Op {
	case kb.MatMul:
		s := matmulShape(p)
		s.M = n
		idx := make([]int, n*s.N)
		for i := range idx {
			idx[i] = i
		}
		return matmul.Reference(s, t[0], t[1], idx), nil
	case kb.BatchedMatMul, kb.MatMulTA, kb.MatMulTB, kb.MatMulTT, kb.GemmMulLeakyReLU, kb.GemmReLUDivide, kb.GemmAddReLU:
		return familyReference(p, t, n)
	case kb.Softmax:
		cols := p.Out[1]
		parallel.For(n, func(r int) { copy(out[r*cols:], reduce.SoftmaxRow(t[0][r*cols:(r+1)*cols])) })
	case kb.LayerNorm:
		w, _ := tensorIndex(p, "ln.weight")
		bi, _ := tensorIndex(p, "ln.bias")
		parallel.For(n, func(i int) {
			y, _, _ := reduce.LayerNormSample(t[0][i*per:(i+1)*per], t[w], t[bi], p.Eps)
			copy(out[i*per:], y)
		})
	case kb.Conv2d, kb.Conv2dReLUBias:
		s := convShape(p)
		s.N = n
		prefix := p.ConvPrefix()
		wi, _ := tensorIndex(p, prefix+"weight")
		in := conv.Inputs{X: t[0], W: t[wi], B: make([]float32, s.K)}
		if bi, ok := tensorIndex(p, prefix+"bias"); ok {
			in.B = t[bi]
		}
		var extra []float32
		if p.Op == kb.Conv2dReLUBias {
			bi, ok := tensorIndex(p, "bias")
			if !ok {
				return nil, fmt.Errorf("%s: no bias tensor", p.ID())
			}
			extra = t[bi]
		}
		oh, ow := s.OH(), s.OW()
		parallel.For(n*s.K, func(plane int) { // one output channel of one image
			img, k := plane/s.K, plane%s.K
			for y := 0; y < oh; y++ {
				for x := 0; x < ow; x++ {
					v := conv.ConvAt(s, in, img, k, y, x)
					if extra != nil {
						v = math.Max(v, 0) + float64(extra[k])
					}
					out[(plane*oh+y)*ow+x] = v
				}
			}
		})
	default:
		return nil, fmt.Errorf("kernelbench %s: no reference for op %q", p.ID(), p.Op)
	}
	return out, nil
}

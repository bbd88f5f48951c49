package rwkv

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/autograd"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
)

// CPUOp is the time-mix as an autograd.Function on the CPU, in float64: inputs (w (C,T), k (B,C,T)),
// output out (B,C,T), gradients from BackwardDK and BackwardDW. It is the reference the GPU op is
// checked against, and its own backward is proven by autograd.GradCheck.
type CPUOp struct {
	Shape Shape
	Eps   float64
}

// Name implements autograd.Function.
func (o CPUOp) Name() string { return fmt.Sprintf("rwkv time-mix (CPU float64, %v)", o.Shape) }

func checkInputs(s Shape, in []*autograd.Tensor) error {
	if len(in) != 2 {
		return fmt.Errorf("takes 2 inputs (w, k), got %d", len(in))
	}
	if in[0].Len() != s.C*s.T || in[1].Len() != s.Len() {
		return fmt.Errorf("w has %d elements and k %d; shape %v needs %d and %d", in[0].Len(), in[1].Len(), s, s.C*s.T, s.Len())
	}
	return s.Validate()
}

// Forward implements autograd.Function.
func (o CPUOp) Forward(ctx *autograd.Context, in ...*autograd.Tensor) (*autograd.Tensor, error) {
	if err := checkInputs(o.Shape, in); err != nil {
		return nil, err
	}
	w, err := in[0].Values()
	if err != nil {
		return nil, err
	}
	k, err := in[1].Values()
	if err != nil {
		return nil, err
	}
	ctx.SaveForBackward(in[0], in[1])
	s := o.Shape
	return autograd.New("out", Forward(s, w, k, o.Eps), s.B, s.C, s.T), nil
}

// Backward implements autograd.Function.
func (o CPUOp) Backward(ctx *autograd.Context, g *autograd.Tensor) ([]*autograd.Tensor, error) {
	s := o.Shape
	saved := ctx.Saved()
	gv, err := g.Values()
	if err != nil {
		return nil, err
	}
	grads := make([]*autograd.Tensor, 2)
	if ctx.NeedsGrad(0) {
		grads[0] = autograd.New("dw", BackwardDW(s, mustValues(saved[1]), gv), s.C, s.T)
	}
	if ctx.NeedsGrad(1) {
		grads[1] = autograd.New("dk", BackwardDK(s, mustValues(saved[0]), gv), s.B, s.C, s.T)
	}
	return grads, nil
}

// mustValues returns host values that Forward already read (so they are on the host).
func mustValues(t *autograd.Tensor) []float64 {
	v, _ := t.Values()
	return v
}

// GPUOp is the time-mix as an autograd.Function on the GPU: Forward launches a forward step, Backward
// launches a backward step (dk and dw). Inputs and outputs are float32 device tensors; host inputs
// are uploaded on first use. Build it with NewGPUOp; Free it when done.
type GPUOp struct {
	Shape   Shape
	Eps     float64
	Fwd     Step
	Bwd     *Backward
	env     *lab.Env
	fwd     *gpu.Kernel
	fwdPlan Launch
}

// NewGPUOp validates both steps on shape s (before any launch) and compiles them.
func NewGPUOp(env *lab.Env, s Shape, fwd Step, bwd BackwardStep) (*GPUOp, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("rwkv GPU op: needs a GPU (%s)", env.Mode)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	plan, err := fwd.Plan(s, env.Session.Device)
	if err != nil {
		return nil, err
	}
	src, err := fwd.Source("")
	if err != nil {
		return nil, err
	}
	prog, err := env.Build(src, fwd.Kernel)
	if err != nil {
		return nil, err
	}
	k, err := prog.Kernel(fwd.Kernel)
	if err != nil {
		return nil, err
	}
	b, err := NewBackward(env, bwd, s)
	if err != nil {
		return nil, err
	}
	return &GPUOp{Shape: s, Eps: Eps, Fwd: fwd, Bwd: b, env: env, fwd: k, fwdPlan: plan}, nil
}

// NewOp is the op a model calls: it picks, for shape s, the fastest forward and backward steps
// whose plans take s (Dispatch.Choose, at precision p) and builds the GPU op from them. Any valid
// shape gets a step (the general ones last); the Choice says which and why the faster ones refused.
func NewOp(env *lab.Env, s Shape, p Precision) (*GPUOp, Choice, error) {
	if !env.GPU() {
		return nil, Choice{Shape: s}, fmt.Errorf("rwkv op: needs a GPU (%s)", env.Mode)
	}
	dp, err := DispatchFor(p)
	if err != nil {
		return nil, Choice{Shape: s}, err
	}
	c, err := dp.Choose(s, env.Session.Device)
	if err != nil {
		return nil, c, err
	}
	op, err := NewGPUOp(env, s, c.Fwd, c.Bwd)
	return op, c, err
}

// Free releases the backward's scratch buffer.
func (o *GPUOp) Free() { o.Bwd.Free() }

// Name implements autograd.Function.
func (o *GPUOp) Name() string {
	return fmt.Sprintf("rwkv time-mix (GPU: %s / %s, %v)", o.Fwd.Name, o.Bwd.Step.Name, o.Shape)
}

// Forward implements autograd.Function: out = eps + causal conv of k with w, on the GPU.
func (o *GPUOp) Forward(ctx *autograd.Context, in ...*autograd.Tensor) (*autograd.Tensor, error) {
	if err := checkInputs(o.Shape, in); err != nil {
		return nil, err
	}
	s, sess := o.Shape, o.env.Session
	inputs, release, err := alignedInputs(sess, in[0], in[1])
	if err != nil {
		return nil, err
	}
	defer release()
	w, k := inputs[0], inputs[1]
	out, err := gpu.Alloc[float32](sess, s.Len())
	if err != nil {
		return nil, fmt.Errorf("allocating out: %w", err)
	}
	args := append([]any{w, k, out, float32(o.Eps), int32(s.B), int32(s.C), int32(s.T)}, o.fwdPlan.Extra...)
	if err := o.fwd.Launch(o.fwdPlan.Config, args...); err != nil {
		out.Free()
		return nil, err
	}
	ctx.SaveForBackward(in[0], in[1])
	return autograd.OnDevice("out", out, true, s.B, s.C, s.T), nil
}

// Backward implements autograd.Function: dw and dk for the upstream gradient g, on the GPU.
func (o *GPUOp) Backward(ctx *autograd.Context, g *autograd.Tensor) ([]*autograd.Tensor, error) {
	s, sess := o.Shape, o.env.Session
	saved := ctx.Saved()
	uploaded := !g.OnGPU() // a host gradient (from the loss on the host) is uploaded here, and freed below
	inputs, release, err := alignedInputs(sess, saved[0], saved[1], g)
	if err != nil {
		return nil, err
	}
	defer release()
	w, k, gd := inputs[0], inputs[1], inputs[2]
	dk, err := gpu.Alloc[float32](sess, s.Len())
	if err != nil {
		return nil, fmt.Errorf("allocating dk: %w", err)
	}
	dw, err := gpu.Alloc[float32](sess, s.C*s.T)
	if err != nil {
		dk.Free()
		return nil, fmt.Errorf("allocating dw: %w", err)
	}
	if err := o.Bwd.Run(w, k, gd, dk, dw); err != nil {
		dk.Free()
		dw.Free()
		return nil, err
	}
	if uploaded {
		if err := sess.Synchronize(); err != nil {
			dk.Free()
			dw.Free()
			return nil, fmt.Errorf("%s: %w", o.Bwd.Step.Name, err)
		}
		g.Free()
	}
	grads := []*autograd.Tensor{autograd.OnDevice("dw", dw, true, s.C, s.T), autograd.OnDevice("dk", dk, true, s.B, s.C, s.T)}
	for i := range grads {
		if !ctx.NeedsGrad(i) {
			grads[i].Free()
			grads[i] = nil
		}
	}
	return grads, nil
}

// alignedInputs is the tensors' device buffers (host tensors are uploaded), each one that does not
// start on a 16-byte boundary (a view into a larger buffer, from a reader's own model) replaced by an
// aligned copy: the steps the op picks read rows as float4 or through cp.async and tensor-core
// loads, which fault on such an address, and the dispatch chose them from the shape alone. release
// waits for the GPU and frees the copies; with none it does nothing.
func alignedInputs(sess *gpu.Session, ts ...*autograd.Tensor) ([]*gpu.Buffer[float32], func(), error) {
	out := make([]*gpu.Buffer[float32], len(ts))
	var copies []*gpu.Buffer[float32]
	release := func() {
		if len(copies) > 0 {
			sess.Synchronize()
		}
		for _, c := range copies {
			c.Free()
		}
	}
	for i, t := range ts {
		b, err := t.Device(sess)
		if err != nil {
			release()
			return nil, nil, err
		}
		if b.DevicePtr()%16 != 0 {
			c, err := gpu.Alloc[float32](sess, b.Len())
			if err == nil {
				err = c.CopyFrom(b)
			}
			if err != nil {
				c.Free()
				release()
				return nil, nil, fmt.Errorf("rwkv op: copying %s, which does not start on a 16-byte boundary, to an aligned buffer: %w", t.Name, err)
			}
			copies = append(copies, c)
			b = c
		}
		out[i] = b
	}
	return out, release, nil
}

// uploadAt uploads host into a buffer offset elements longer and returns the view of host's
// elements (the buffer itself when offset is 0) and the buffer, which the caller frees.
func uploadAt(sess *gpu.Session, host []float32, offset int) (view, buf *gpu.Buffer[float32], err error) {
	buf, err = gpu.Upload(sess, append(make([]float32, offset), host...))
	if err != nil {
		return nil, nil, err
	}
	if view, err = buf.View(offset, len(host)); err != nil {
		buf.Free()
		return nil, nil, err
	}
	return view, buf, nil
}

// TrainingLoss is the original's check loss, (r*r - tanh(r)).sum() with r = op(w, k), recorded on tp.
// Its gradient with respect to r is 2r - (1 - tanh(r)^2).
func TrainingLoss(tp *autograd.Tape, op autograd.Function, w, k *autograd.Tensor) (*autograd.Tensor, error) {
	r, err := tp.Apply(op, w, k)
	if err != nil {
		return nil, err
	}
	sq, err := tp.Apply(autograd.Mul, r, r)
	if err != nil {
		return nil, err
	}
	th, err := tp.Apply(autograd.Tanh, r)
	if err != nil {
		return nil, err
	}
	d, err := tp.Apply(autograd.Sub, sq, th)
	if err != nil {
		return nil, err
	}
	return tp.Apply(autograd.Sum, d)
}

// GradCheckShapes are the small shapes the finite-difference checks use: odd sizes, T not a
// multiple of 4 (steps that need one refuse it and are skipped), B not a multiple of 16.
var GradCheckShapes = []Shape{{B: 2, C: 3, T: 8}, {B: 3, C: 2, T: 13}, {B: 4, C: 2, T: 16}}

// InputTensors draws the article's inputs for shape s as parameters (w (C,T), k (B,C,T)).
func InputTensors(s Shape, seed uint64) (w, k *autograd.Tensor) {
	w32, k32 := Inputs(s, seed)
	return autograd.Param("w", widen(w32), s.C, s.T), autograd.Param("k", widen(k32), s.B, s.C, s.T)
}

func widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// GradCheckCPU proves the float64 reference backward with autograd.GradCheck through the training
// loss, on every element of w and k.
func GradCheckCPU(s Shape, seed uint64) (autograd.GradCheckResult, error) {
	w, k := InputTensors(s, seed)
	op := CPUOp{Shape: s, Eps: Eps}
	return autograd.GradCheck(func(tp *autograd.Tape, in []*autograd.Tensor) (*autograd.Tensor, error) {
		return TrainingLoss(tp, op, in[0], in[1])
	}, []*autograd.Tensor{w, k}, autograd.Float64Check)
}

// GradCheckGPU is the finite-difference check of a GPU forward and backward step through the
// training loss on a small shape: the loss is evaluated with the float32 forward, so it uses
// autograd.Float32Check. maxPerInput limits the checked elements of each input (0: all).
func GradCheckGPU(env *lab.Env, s Shape, fwd Step, bwd BackwardStep, seed uint64, maxPerInput int) (autograd.GradCheckResult, error) {
	op, err := NewGPUOp(env, s, fwd, bwd)
	if err != nil {
		return autograd.GradCheckResult{}, err
	}
	defer op.Free()
	w, k := InputTensors(s, seed)
	opts := autograd.Float32Check
	opts.MaxPerInput, opts.Seed = maxPerInput, seed
	return autograd.GradCheck(func(tp *autograd.Tape, in []*autograd.Tensor) (*autograd.Tensor, error) {
		return TrainingLoss(tp, op, in[0], in[1])
	}, []*autograd.Tensor{w, k}, opts)
}

// AutogradResult is the training loss run through the GPU op and its gradients compared with the
// float64 reference.
type AutogradResult struct {
	Shape Shape
	Loss  float64 // through the GPU op
	// LossRef is the float64 loss; NaN when only sampled rows were computed.
	LossRef float64
	DK, DW  check.Result
	Checked string
}

// OK says both gradients passed.
func (r AutogradResult) OK() bool { return r.DK.OK && r.DW.OK }

// String is a short report.
func (r AutogradResult) String() string {
	ref := "reference loss not computed (sampled check)"
	if !math.IsNaN(r.LossRef) {
		ref = fmt.Sprintf("float64 reference %.10g", r.LossRef)
	}
	return fmt.Sprintf("loss (r*r - tanh(r)).sum() on %v: GPU %.10g, %s\ndw %s\ndk %s\nchecked: %s", r.Shape, r.Loss, ref, r.DW, r.DK, r.Checked)
}

// AutogradCheck runs the original's training loss (r*r - tanh(r)).sum() through the GPU op on the
// tape, then compares the GPU's dw and dk with the float64 reference chain (forward, the loss's
// gradient 2r - (1 - tanh(r)^2), BackwardDK and BackwardDW) on checkRows random rows of dk and a
// matching number of channels of dw (everything when checkRows <= 0 or >= B*C).
func AutogradCheck(env *lab.Env, s Shape, fwd Step, bwd BackwardStep, seed uint64, checkRows int) (AutogradResult, error) {
	return autogradCheck(env, s, fwd, bwd, seed, checkRows, 0)
}

// autogradCheck is AutogradCheck with w and k handed to the op as views offset elements into larger
// buffers (offset 1: not 16-byte aligned, as a reader's slice of a bigger tensor may be).
func autogradCheck(env *lab.Env, s Shape, fwd Step, bwd BackwardStep, seed uint64, checkRows, offset int) (AutogradResult, error) {
	res := AutogradResult{Shape: s, LossRef: math.NaN()}
	op, err := NewGPUOp(env, s, fwd, bwd)
	if err != nil {
		return res, err
	}
	defer op.Free()
	w32, k32 := Inputs(s, seed)
	wd, wbuf, err := uploadAt(env.Session, w32, offset)
	if err != nil {
		return res, err
	}
	defer wbuf.Free()
	kd, kbuf, err := uploadAt(env.Session, k32, offset)
	if err != nil {
		return res, err
	}
	defer kbuf.Free()
	w := autograd.OnDevice("w", wd, true, s.C, s.T)
	w.RequiresGrad = true
	k := autograd.OnDevice("k", kd, true, s.B, s.C, s.T)
	k.RequiresGrad = true

	tp := autograd.NewTape()
	defer tp.Free()
	loss, err := TrainingLoss(tp, op, w, k)
	if err != nil {
		return res, err
	}
	lv, err := loss.Values()
	if err != nil {
		return res, err
	}
	res.Loss = lv[0]
	if err := tp.Backward(loss); err != nil {
		return res, err
	}
	defer w.Grad.Free()
	defer k.Grad.Free()
	dw, err := w.Grad.Values()
	if err != nil {
		return res, err
	}
	dk, err := k.Grad.Values()
	if err != nil {
		return res, err
	}

	// The reference chain on the rows that the checked dk rows and dw channels need.
	var rows, channels []int
	if checkRows > 0 && checkRows < s.Rows() {
		rows = SampleRows(s, checkRows, seed)
		channels = SampleChannels(s, max(2, checkRows/max(1, s.B)), seed+1)
		res.Checked = fmt.Sprintf("dk on %d random (b,c) rows of %d, dw on %d random channels of %d", len(rows), s.Rows(), len(channels), s.C)
	} else {
		rows, channels = AllRows(s), SampleChannels(s, s.C, seed)
		res.Checked = "every element of dk and dw"
	}
	need := map[int]bool{}
	for _, r := range rows {
		need[r] = true
	}
	for _, c := range channels {
		for b := 0; b < s.B; b++ {
			need[b*s.C+c] = true
		}
	}
	all := make([]int, 0, len(need))
	for r := 0; r < s.Rows(); r++ {
		if need[r] {
			all = append(all, r)
		}
	}
	out := ForwardRows(s, w32, k32, Eps, all)
	g := make([]float64, s.Len())
	var lref float64
	for i, r := range all {
		for t := 0; t < s.T; t++ {
			o := out[i*s.T+t]
			th := math.Tanh(o)
			g[r*s.T+t] = 2*o - (1 - th*th)
			lref += o*o - th
		}
	}
	if len(all) == s.Rows() {
		res.LossRef = lref
	}
	res.DK = check.Compare(Gather(dk, s.T, rows), BackwardDKRows(s, widen(w32), g, rows), DKTolerance)
	res.DW = check.Compare(Gather(dw, s.T, channels), BackwardDWChannels(s, widen(k32), g, channels), DWTolerance)
	return res, nil
}

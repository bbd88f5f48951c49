package trilinear

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/autograd"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	kt "github.com/cudalessons/cudalessons/kernels/trilinear"
)

// shapeOf reads (N, F) from the op's inputs, feats (N, 8, F) and points (N, 3), and refuses
// anything else before any launch.
func shapeOf(in []*autograd.Tensor) (Shape, error) {
	if len(in) != 2 {
		return Shape{}, fmt.Errorf("trilinear takes 2 inputs (feats, points), got %d", len(in))
	}
	f, p := in[0].Shape, in[1].Shape
	if len(f) != 3 || f[1] != 8 {
		return Shape{}, fmt.Errorf("trilinear: feats has shape %v, want (N, 8, F)", f)
	}
	if len(p) != 2 || p[1] != 3 {
		return Shape{}, fmt.Errorf("trilinear: points has shape %v, want (N, 3)", p)
	}
	if f[0] != p[0] {
		return Shape{}, fmt.Errorf("trilinear: feats has N = %d points and points has %d", f[0], p[0])
	}
	s := Shape{N: f[0], F: f[2]}
	return s, s.Validate()
}

// CPUOp is the op as an autograd.Function on the CPU in float64: Forward, BackwardFeats and
// BackwardPoints. It is the reference the GPU op is checked against; GradCheckCPU proves its backward.
type CPUOp struct{}

// Name implements autograd.Function.
func (CPUOp) Name() string { return "trilinear (CPU float64)" }

// Forward implements autograd.Function.
func (CPUOp) Forward(ctx *autograd.Context, in ...*autograd.Tensor) (*autograd.Tensor, error) {
	s, err := shapeOf(in)
	if err != nil {
		return nil, err
	}
	feats, err := in[0].Values()
	if err != nil {
		return nil, err
	}
	points, err := in[1].Values()
	if err != nil {
		return nil, err
	}
	ctx.SaveForBackward(in[0], in[1])
	return autograd.New("out", Forward(s, feats, points), s.N, s.F), nil
}

// Backward implements autograd.Function.
func (CPUOp) Backward(ctx *autograd.Context, g *autograd.Tensor) ([]*autograd.Tensor, error) {
	sv := ctx.Saved()
	s, _ := shapeOf(sv)
	feats, _ := sv[0].Values()
	points, _ := sv[1].Values()
	gv, err := g.Values()
	if err != nil {
		return nil, err
	}
	grads := make([]*autograd.Tensor, 2)
	if ctx.NeedsGrad(0) {
		grads[0] = autograd.New("dfeats", BackwardFeats(s, points, gv, nil), s.N, 8, s.F)
	}
	if ctx.NeedsGrad(1) {
		grads[1] = autograd.New("dpoints", BackwardPoints(s, feats, points, gv, nil), s.N, 3)
	}
	return grads, nil
}

// The steps the GPU op dispatches to: each plan picks its vector kernel when the shape and the
// pointers allow it and its general kernel otherwise.
var (
	OpForward       = mustStep("3 float4")
	OpBackwardFeats = mustStep("5 backward feats")
	OpBackwardPts   = mustStep("6 backward points")
)

func mustStep(name string) Step {
	st, err := StepByName(name)
	if err != nil {
		panic(err)
	}
	return st
}

// GPUOp is the op as an autograd.Function on the GPU, for ANY valid shape: Forward runs step 3
// (float4, or step 2's general kernel when F % 4 != 0 or a buffer is misaligned), Backward runs
// step 5 for dfeats and step 6 for dpoints, each only when its input needs a gradient. N or F zero
// launches nothing. Tensors are float32 on the device (host inputs are uploaded on first use).
type GPUOp struct {
	env *lab.Env
	// Launches names the kernels of the last call, for reports.
	Launches []string
}

// NewGPUOp returns the GPU op; it needs a GPU.
func NewGPUOp(env *lab.Env) (*GPUOp, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("trilinear GPU op: needs a GPU (%s)", env.Mode)
	}
	return &GPUOp{env: env}, nil
}

// Name implements autograd.Function.
func (o *GPUOp) Name() string { return "trilinear (GPU float32)" }

// launch plans step st on shape s for these pointers, compiles it (once per env) and queues it.
func (o *GPUOp) launch(st Step, s Shape, args ...any) error {
	aligned := true
	for _, a := range args {
		if d, ok := a.(gpu.DevicePointer); ok && d.DevicePtr()%16 != 0 {
			aligned = false
		}
	}
	l, err := st.PlanFor(s, o.env.Session.Device, aligned)
	if err != nil {
		return err
	}
	src, err := kt.Source(l.File)
	if err != nil {
		return err
	}
	prog, err := o.env.Build(src, l.Kernel)
	if err != nil {
		return err
	}
	k, err := prog.Kernel(l.Kernel)
	if err != nil {
		return err
	}
	o.Launches = append(o.Launches, l.Kernel)
	return k.Launch(l.Config, append(args, int32(s.N), int32(s.F))...)
}

// Forward implements autograd.Function.
func (o *GPUOp) Forward(ctx *autograd.Context, in ...*autograd.Tensor) (*autograd.Tensor, error) {
	s, err := shapeOf(in)
	if err != nil {
		return nil, err
	}
	o.Launches = nil
	ctx.SaveForBackward(in[0], in[1])
	if s.Empty() {
		return autograd.New("out", []float64{}, s.N, s.F), nil
	}
	sess := o.env.Session
	feats, err := in[0].Device(sess)
	if err != nil {
		return nil, err
	}
	points, err := in[1].Device(sess)
	if err != nil {
		return nil, err
	}
	out, err := gpu.Alloc[float32](sess, s.OutLen())
	if err != nil {
		return nil, fmt.Errorf("allocating out: %w", err)
	}
	if err := o.launch(OpForward, s, feats, points, out); err != nil {
		out.Free()
		return nil, err
	}
	return autograd.OnDevice("out", out, true, s.N, s.F), nil
}

// Backward implements autograd.Function.
func (o *GPUOp) Backward(ctx *autograd.Context, g *autograd.Tensor) ([]*autograd.Tensor, error) {
	sv := ctx.Saved()
	s, _ := shapeOf(sv)
	grads := make([]*autograd.Tensor, 2)
	if s.Empty() {
		if ctx.NeedsGrad(0) {
			grads[0] = autograd.New("dfeats", []float64{}, s.N, 8, s.F)
		}
		if ctx.NeedsGrad(1) {
			grads[1] = autograd.New("dpoints", make([]float64, s.PointsLen()), s.N, 3)
		}
		return grads, nil
	}
	sess := o.env.Session
	uploaded := !g.OnGPU()
	gd, err := g.Device(sess)
	if err != nil {
		return nil, err
	}
	points, err := sv[1].Device(sess)
	if err != nil {
		return nil, err
	}
	fail := func(err error) ([]*autograd.Tensor, error) {
		for _, t := range grads {
			t.Free()
		}
		return nil, err
	}
	if ctx.NeedsGrad(0) {
		d, err := gpu.Alloc[float32](sess, s.FeatsLen())
		if err != nil {
			return fail(fmt.Errorf("allocating dfeats: %w", err))
		}
		grads[0] = autograd.OnDevice("dfeats", d, true, s.N, 8, s.F)
		if err := o.launch(OpBackwardFeats, s, gd, points, d); err != nil {
			return fail(err)
		}
	}
	if ctx.NeedsGrad(1) {
		feats, err := sv[0].Device(sess)
		if err != nil {
			return fail(err)
		}
		d, err := gpu.Alloc[float32](sess, s.PointsLen())
		if err != nil {
			return fail(fmt.Errorf("allocating dpoints: %w", err))
		}
		grads[1] = autograd.OnDevice("dpoints", d, true, s.N, 3)
		if err := o.launch(OpBackwardPts, s, feats, points, gd, d); err != nil {
			return fail(err)
		}
	}
	if uploaded {
		if err := sess.Synchronize(); err != nil {
			return fail(err)
		}
		g.Free()
	}
	return grads, nil
}

// GradLoss is the loss the gradient checks use: sum(tanh(out)^2), so that dL/dout differs from
// element to element.
func GradLoss(tp *autograd.Tape, op autograd.Function, feats, points *autograd.Tensor) (*autograd.Tensor, error) {
	out, err := tp.Apply(op, feats, points)
	if err != nil {
		return nil, err
	}
	return autograd.Chain(tp, out, autograd.Tanh, autograd.Square, autograd.Sum)
}

// GradCheckShapes are small shapes for the finite-difference checks: F = 1, 3 (the general
// kernels), 4 and 8 (the vector kernels), an odd N.
var GradCheckShapes = []Shape{{N: 3, F: 1}, {N: 2, F: 3}, {N: 5, F: 4}, {N: 2, F: 8}}

// GradInputs draws inputs for shape s as parameters. The points stay inside (-0.9, 0.9), so that
// a finite-difference step never crosses the clamp's kink at +-1.
func GradInputs(s Shape, seed uint64) (feats, points *autograd.Tensor) {
	in := NewInputs(s, seed, -0.9, 0.9)
	return autograd.Param("feats", widen(in.Feats), s.N, 8, s.F), autograd.Param("points", widen(in.Points), s.N, 3)
}

// GradCheckCPU proves the float64 op's backward (dfeats and dpoints) against central finite
// differences of GradLoss on every element.
func GradCheckCPU(s Shape, seed uint64) (autograd.GradCheckResult, error) {
	feats, points := GradInputs(s, seed)
	return autograd.GradCheck(func(tp *autograd.Tape, in []*autograd.Tensor) (*autograd.Tensor, error) {
		return GradLoss(tp, CPUOp{}, in[0], in[1])
	}, []*autograd.Tensor{feats, points}, autograd.Float64Check)
}

// GradCheckGPU is the same check of the GPU op: the loss runs through float32 kernels, so it uses
// autograd.Float32Check. maxPerInput limits the checked elements of each input (0: all).
func GradCheckGPU(env *lab.Env, s Shape, seed uint64, maxPerInput int) (autograd.GradCheckResult, error) {
	op, err := NewGPUOp(env)
	if err != nil {
		return autograd.GradCheckResult{}, err
	}
	feats, points := GradInputs(s, seed)
	opts := autograd.Float32Check
	opts.MaxPerInput, opts.Seed = maxPerInput, seed
	return autograd.GradCheck(func(tp *autograd.Tape, in []*autograd.Tensor) (*autograd.Tensor, error) {
		return GradLoss(tp, op, in[0], in[1])
	}, []*autograd.Tensor{feats, points}, opts)
}

// OpResult is the GPU op run through a tape at one shape, its output and both gradients compared
// with the float64 references.
type OpResult struct {
	Shape            Shape
	Out, DFeats, DPt check.Result
	Launches         []string
	Checked          string
}

// OK says all three passed.
func (r OpResult) OK() bool { return r.Out.OK && r.DFeats.OK && r.DPt.OK }

// String is a short report.
func (r OpResult) String() string {
	return fmt.Sprintf("%v (kernels %v; %s): out %v; dfeats %v; dpoints %v", r.Shape, r.Launches, r.Checked, r.Out, r.DFeats, r.DPt)
}

// OpCheck runs the GPU op forward and backward (upstream gradient g) on a tape at shape s, with
// points drawn in [lo, hi] (wider than [-1, 1] exercises the clamp), and compares out, dfeats and
// dpoints with the references on checkRows random points (all when checkRows <= 0).
func OpCheck(env *lab.Env, s Shape, seed uint64, lo, hi float64, checkRows int) (OpResult, error) {
	res := OpResult{Shape: s}
	op, err := NewGPUOp(env)
	if err != nil {
		return res, err
	}
	in := NewInputs(s, seed, lo, hi)
	fd, err := gpu.Upload(env.Session, in.Feats)
	if err != nil {
		return res, err
	}
	pd, err := gpu.Upload(env.Session, in.Points)
	if err != nil {
		fd.Free()
		return res, err
	}
	feats := autograd.OnDevice("feats", fd, true, s.N, 8, s.F)
	points := autograd.OnDevice("points", pd, true, s.N, 3)
	feats.RequiresGrad, points.RequiresGrad = true, true
	defer feats.Free()
	defer points.Free()
	tp := autograd.NewTape()
	defer tp.Free()
	out, err := tp.Apply(op, feats, points)
	if err != nil {
		return res, err
	}
	if err := tp.BackwardWith(out, autograd.New("g", widen(in.G), s.N, s.F)); err != nil {
		return res, err
	}
	res.Launches = op.Launches // the forward's kernel, then the backward's
	defer feats.Grad.Free()
	defer points.Grad.Free()
	ov, err := out.Values()
	if err != nil {
		return res, err
	}
	dfv, err := feats.Grad.Values()
	if err != nil {
		return res, err
	}
	dpv, err := points.Grad.Values()
	if err != nil {
		return res, err
	}
	p := &Problem{Shape: s, In: in}
	if checkRows > 0 && checkRows < s.N {
		p.Rows = SampleRows(s, checkRows, seed+1)
	}
	res.Checked = p.Checked()
	ss, f64, p64, g64, _ := p.subInputs(F32)
	res.Out = check.Compare(p.gatherRows(ov, s.F), Forward(ss, f64, p64), ForwardTol)
	res.DFeats = check.Compare(p.gatherRows(dfv, 8*s.F), BackwardFeats(ss, p64, g64, nil), FeatsTol)
	res.DPt = check.Compare(p.gatherRows(dpv, 3), BackwardPoints(ss, f64, p64, g64, nil), PointsTolerance(s.F, f64, g64))
	return res, nil
}

package giou

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/autograd"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	kg "github.com/cudalessons/cudalessons/kernels/giou"
)

// checkPred refuses a pred tensor that is not (B, M, 4) for the op's batch.
func checkPred(s Shape, in []*autograd.Tensor) error {
	if len(in) != 1 {
		return fmt.Errorf("giou takes 1 input (pred), got %d", len(in))
	}
	sh := in[0].Shape
	if len(sh) != 3 || sh[0] != s.B || sh[1] != s.M || sh[2] != 4 {
		return fmt.Errorf("giou: pred has shape %v, want (B, M, 4) = (%d, %d, 4) for this batch's targets", sh, s.B, s.M)
	}
	return nil
}

// targetsOnly validates a batch's targets and counts (its Pred is the op's input, not used).
func targetsOnly(bt *Batch) error {
	c := *bt
	c.Pred = make([]float32, 4*bt.Slots())
	return c.Validate()
}

// CPUOp is the loss as an autograd.Function on the CPU in float64: its input is pred (B, M, 4); the
// batch's targets and counts are constants of the op. It is the reference the GPU op is checked
// against; GradCheckCPU proves its backward.
type CPUOp struct{ Batch *Batch }

// Name implements autograd.Function.
func (CPUOp) Name() string { return "giou loss (CPU float64)" }

// Forward implements autograd.Function.
func (o CPUOp) Forward(ctx *autograd.Context, in ...*autograd.Tensor) (*autograd.Tensor, error) {
	if err := checkPred(o.Batch.Shape, in); err != nil {
		return nil, err
	}
	if err := targetsOnly(o.Batch); err != nil {
		return nil, err
	}
	pred, err := in[0].Values()
	if err != nil {
		return nil, err
	}
	grad := make([]float64, len(pred))
	loss := Loss(o.Batch.Shape, pred, widen(o.Batch.Target), o.Batch.Counts, grad)
	ctx.Set("grad", grad)
	return autograd.Scalar("loss", loss), nil
}

// Backward implements autograd.Function.
func (o CPUOp) Backward(ctx *autograd.Context, g *autograd.Tensor) ([]*autograd.Tensor, error) {
	gv, err := g.Values()
	if err != nil {
		return nil, err
	}
	v, _ := ctx.Get("grad")
	grad := v.([]float64)
	out := make([]float64, len(grad))
	for i := range grad {
		out[i] = gv[0] * grad[i]
	}
	s := o.Batch.Shape
	return []*autograd.Tensor{autograd.New("dpred", out, s.B, s.M, 4)}, nil
}

// The steps the GPU op dispatches to, the fastest of the lesson on the article's workload: step 6's
// loss when no gradient is needed, step 6's fused forward and backward when one is; each falls back
// to its scalar-load kernel when a buffer is not 16-byte aligned, and every B and M is taken.
var (
	OpForward = mustStep("6 warp per image")
	OpTrain   = mustStep("6 warp fwd+bwd")
)

// GPUOp is the loss as an autograd.Function on the GPU, for ANY batch: B images of M slots, any
// counts in [0, M]. Its input is pred (B, M, 4) float32 on the device (a host tensor is uploaded);
// the targets and counts are the op's constants, uploaded once. When pred needs a gradient, Forward
// runs the fused OpTrain and keeps dL/dpred for Backward, which hands it over (upstream gradient 1,
// the usual case for a loss) or scales it on the GPU (giou_scale_grad); otherwise it runs OpForward.
// B = 0 or M = 0 launches nothing (loss 0). Close frees the op's buffers.
//
// Predictions are never refused: padded slots (past an image's count) are never read, whatever they
// hold, and a valid prediction however large (a box at 1e20, whose area overflows float32) is
// computed in a power-of-two scaled frame, so every finite box gives a finite loss and gradient. A
// refusal would need a pass over pred on the device and would stop a training run on one wild box;
// a NaN or Inf in a valid prediction propagates to the loss, as in PyTorch (see Conventions).
type GPUOp struct {
	env   *lab.Env
	Batch *Batch
	// Launches names the kernels of the last calls, for reports.
	Launches []string

	target, partial *gpu.Buffer[float32]
	counts          *gpu.Buffer[int32]
	done            *gpu.Buffer[uint32]
	pending         map[*autograd.Tensor]bool // gradients computed by Forward, not yet handed to Backward
}

// NewGPUOp returns the GPU op for a batch's targets and counts (validated now: a bad target is
// refused before any launch); it needs a GPU.
func NewGPUOp(env *lab.Env, bt *Batch) (*GPUOp, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("giou GPU op: needs a GPU (%s)", env.Mode)
	}
	if err := targetsOnly(bt); err != nil {
		return nil, err
	}
	return &GPUOp{env: env, Batch: bt, pending: map[*autograd.Tensor]bool{}}, nil
}

// Close frees the op's buffers and any gradient no Backward took.
func (o *GPUOp) Close() {
	for t := range o.pending {
		t.Free()
	}
	o.pending = map[*autograd.Tensor]bool{}
	for _, b := range []interface{ Free() error }{o.target, o.partial, o.counts, o.done} {
		if b != nil {
			b.Free()
		}
	}
	o.target, o.partial, o.counts, o.done = nil, nil, nil, nil
}

// Name implements autograd.Function.
func (o *GPUOp) Name() string { return "giou loss (GPU float32)" }

func (o *GPUOp) upload() error {
	if o.target != nil {
		return nil
	}
	s := o.env.Session
	bt := o.Batch
	var err error
	if o.target, err = gpu.Upload(s, bt.Target); err != nil {
		return err
	}
	if o.counts, err = gpu.Upload(s, bt.Counts); err != nil {
		return err
	}
	if o.partial, err = gpu.Alloc[float32](s, 2*Grid(bt.B)); err != nil {
		return err
	}
	if o.done, err = gpu.Alloc[uint32](s, 1); err != nil {
		return err
	}
	return o.done.Zero()
}

// launch plans step st for these buffers, compiles it (once per env) and queues it.
func (o *GPUOp) launch(st Step, args ...any) error {
	aligned := gpu.Aligned(16, pointers(args)...)
	l, err := st.PlanFor(o.Batch.Shape, aligned)
	if err != nil {
		return err
	}
	kl := l.Kernels[0]
	src, err := kg.Source(kl.File)
	if err != nil {
		return err
	}
	prog, err := o.env.Build(src, kl.Name)
	if err != nil {
		return err
	}
	k, err := prog.Kernel(kl.Name)
	if err != nil {
		return err
	}
	o.Launches = append(o.Launches, kl.Name)
	return k.Launch(kl.Config, args...)
}

func pointers(args []any) []gpu.DevicePointer {
	var out []gpu.DevicePointer
	for _, a := range args {
		if d, ok := a.(*gpu.Buffer[float32]); ok {
			out = append(out, d)
		}
	}
	return out
}

// Forward implements autograd.Function.
func (o *GPUOp) Forward(ctx *autograd.Context, in ...*autograd.Tensor) (*autograd.Tensor, error) {
	bt := o.Batch
	if err := checkPred(bt.Shape, in); err != nil {
		return nil, err
	}
	if bt.B == 0 || bt.M == 0 {
		return autograd.Scalar("loss", 0), nil
	}
	if err := o.upload(); err != nil {
		return nil, err
	}
	sess := o.env.Session
	pred, err := in[0].Device(sess)
	if err != nil {
		return nil, err
	}
	loss, err := gpu.Alloc[float32](sess, 1)
	if err != nil {
		return nil, fmt.Errorf("allocating the loss: %w", err)
	}
	out := autograd.OnDevice("loss", loss, true, 1)
	dims := []any{int32(bt.B), int32(bt.M)}
	if !ctx.NeedsGrad(0) {
		if err := o.launch(OpForward, append([]any{pred, o.target, o.counts, o.partial, o.done, loss}, dims...)...); err != nil {
			out.Free()
			return nil, err
		}
		return out, nil
	}
	d, err := gpu.Alloc[float32](sess, 4*bt.Slots())
	if err != nil {
		out.Free()
		return nil, fmt.Errorf("allocating dpred: %w", err)
	}
	grad := autograd.OnDevice("dpred", d, true, bt.B, bt.M, 4)
	inv := float32(1 / math.Max(float64(bt.Total()), 1))
	if err := o.launch(OpTrain, append([]any{pred, o.target, o.counts, o.partial, o.done, loss, d}, dims[0], dims[1], inv)...); err != nil {
		out.Free()
		grad.Free()
		return nil, err
	}
	o.pending[grad] = true
	ctx.Set("grad", grad)
	return out, nil
}

// Backward implements autograd.Function.
func (o *GPUOp) Backward(ctx *autograd.Context, g *autograd.Tensor) ([]*autograd.Tensor, error) {
	bt := o.Batch
	v, ok := ctx.Get("grad")
	if !ok { // an empty batch: the gradient is zero
		return []*autograd.Tensor{autograd.New("dpred", make([]float64, 4*bt.Slots()), bt.B, bt.M, 4)}, nil
	}
	grad := v.(*autograd.Tensor)
	delete(o.pending, grad)
	if g.OnHost() {
		if gv, _ := g.Values(); len(gv) == 1 && gv[0] == 1 {
			return []*autograd.Tensor{grad}, nil // a loss's own gradient: no work
		}
	}
	sess := o.env.Session
	uploaded := !g.OnGPU()
	gd, err := g.Device(sess)
	if err != nil {
		grad.Free()
		return nil, err
	}
	src, _ := grad.Device(sess)
	d, err := gpu.Alloc[float32](sess, 4*bt.Slots())
	if err != nil {
		grad.Free()
		return nil, fmt.Errorf("allocating dpred: %w", err)
	}
	scaled := autograd.OnDevice("dpred", d, true, bt.B, bt.M, 4)
	n := 4 * bt.Slots()
	fail := func(err error) ([]*autograd.Tensor, error) {
		grad.Free()
		scaled.Free()
		return nil, err
	}
	srcK, err := kg.Source("5_fused.cu")
	if err != nil {
		return fail(err)
	}
	prog, err := o.env.Build(srcK, "giou_scale_grad")
	if err != nil {
		return fail(err)
	}
	k, err := prog.Kernel("giou_scale_grad")
	if err != nil {
		return fail(err)
	}
	o.Launches = append(o.Launches, "giou_scale_grad")
	cfg := gpu.Config{Grid: gpu.D1(gpu.WavesGrid(sess.Device, n, 256, 4)), Block: gpu.D1(256)}
	if err := k.Launch(cfg, src, gd, d, int64(n)); err != nil {
		return fail(err)
	}
	if err := sess.Synchronize(); err != nil {
		return fail(err)
	}
	grad.Free()
	if uploaded {
		g.Free()
	}
	return []*autograd.Tensor{scaled}, nil
}

// GradLoss is the loss the gradient checks use: the op's loss, squared, so that the upstream
// gradient 2L differs from 1 and the scaling path of Backward runs too.
func GradLoss(tp *autograd.Tape, op autograd.Function, pred *autograd.Tensor) (*autograd.Tensor, error) {
	out, err := tp.Apply(op, pred)
	if err != nil {
		return nil, err
	}
	return autograd.Chain(tp, out, autograd.Square)
}

// GradCheckShapes are small batches for the finite-difference checks: one slot, odd sizes, a batch
// with empty images; EmptyShape's images are all empty.
var GradCheckShapes = []Shape{{B: 2, M: 1}, {B: 3, M: 4}, {B: 5, M: 7}}

// GradScale shrinks the generated boxes for the gradient checks (GIoU does not change with the
// scale; the gradient grows by it): coordinates in [0, 8), so dL/dpred is O(0.1) and an absolute
// bound of 1e-4 means something.
const GradScale = 1.0 / 32

// GradMargin is the distance every compared pair of coordinates (and every intersection and
// enclosure width) keeps from its kink in the gradient-check batches: three steps of the float32 check.
const GradMargin = 3 * 1e-2

// GradBatch draws a batch for shape s whose valid boxes keep GradMargin from every kink of the loss
// (a min or max tie, a width crossing 0), so that a central difference never straddles one. It
// tries seeds from seed on; at least one image holds a box when M > 0.
func GradBatch(s Shape, seed uint64) *Batch {
	for k := uint64(0); ; k++ {
		bt := Generate(s, seed+1000*k)
		for i := range bt.Pred {
			bt.Pred[i] *= GradScale
			bt.Target[i] *= GradScale
		}
		if (s.M == 0 || bt.Total() > 0) && kinkFree(bt, GradMargin) {
			return bt
		}
	}
}

func kinkFree(bt *Batch, m float64) bool {
	for b := 0; b < bt.B; b++ {
		for j := 0; j < int(bt.Counts[b]); j++ {
			o := (b*bt.M + j) * 4
			p, t := bt.Pred[o:o+4], bt.Target[o:o+4]
			for k := range 4 {
				if math.Abs(float64(p[k]-t[k])) < m {
					return false
				}
			}
			iw := math.Min(float64(p[2]), float64(t[2])) - math.Max(float64(p[0]), float64(t[0]))
			ih := math.Min(float64(p[3]), float64(t[3])) - math.Max(float64(p[1]), float64(t[1]))
			if math.Abs(iw) < m || math.Abs(ih) < m || p[2]-p[0] < float32(m) || p[3]-p[1] < float32(m) {
				return false
			}
		}
	}
	return true
}

// GPUCheck is the float32 bound of the GPU op's gradient check: h = 1e-2 on coordinates of a few
// units; rounding of the float32 loss (6e-8 relative, divided by 2h) stays near 3e-6 and truncation
// O(h^2) near 1e-5, under atol 1e-4 + rtol 1e-2, while the gradients are O(0.1).
var GPUCheck = autograd.GradCheckOptions{Eps: 1e-2, Atol: 1e-4, Rtol: 1e-2,
	Why: "float32 loss: rounding 6e-8/2h ~ 3e-6 and truncation O(h^2) ~ 1e-5 under 1e-4 + 1e-2|numeric|; gradients O(0.1)"}

// GradCheckCPU proves the float64 op's backward against central finite differences of GradLoss on
// every element of pred (padded slots included: their gradient is 0).
func GradCheckCPU(s Shape, seed uint64) (autograd.GradCheckResult, error) {
	bt := GradBatch(s, seed)
	pred := autograd.Param("pred", widen(bt.Pred), s.B, s.M, 4)
	return autograd.GradCheck(func(tp *autograd.Tape, in []*autograd.Tensor) (*autograd.Tensor, error) {
		return GradLoss(tp, CPUOp{Batch: bt}, in[0])
	}, []*autograd.Tensor{pred}, autograd.Float64Check)
}

// GradCheckGPU is the same check of the GPU op, under GPUCheck. Every evaluation, the finite
// differences' included, runs OpTrain (the inputs keep their gradient flag), so it ties the fused
// gradient to the fused kernel's own loss; OpForward, the loss alone, is checked against the float64
// loss apart.
func GradCheckGPU(env *lab.Env, s Shape, seed uint64) (autograd.GradCheckResult, error) {
	bt := GradBatch(s, seed)
	op, err := NewGPUOp(env, bt)
	if err != nil {
		return autograd.GradCheckResult{}, err
	}
	defer op.Close()
	pred := autograd.Param("pred", widen(bt.Pred), s.B, s.M, 4)
	return autograd.GradCheck(func(tp *autograd.Tape, in []*autograd.Tensor) (*autograd.Tensor, error) {
		return GradLoss(tp, op, in[0])
	}, []*autograd.Tensor{pred}, GPUCheck)
}

// OpResult is the GPU op run through a tape on a batch, its loss and gradient compared with the
// float64 reference.
type OpResult struct {
	Shape      Shape
	Loss, Grad float64
	Outcome    Outcome
	Launches   []string
}

// OK says both passed.
func (r OpResult) OK() bool { return r.Outcome.OK() }

// String is a short report.
func (r OpResult) String() string {
	return fmt.Sprintf("%v (kernels %v): %v", r.Shape, r.Launches, r.Outcome)
}

// OpCheck runs the GPU op forward and backward on a tape for batch bt, with pred a device view
// offset elements into its allocation (1: misaligned, the general kernel), and compares the loss
// and every element of dL/dpred with the float64 reference.
func OpCheck(env *lab.Env, bt *Batch, offset int) (OpResult, error) {
	res := OpResult{Shape: bt.Shape}
	op, err := NewGPUOp(env, bt)
	if err != nil {
		return res, err
	}
	defer op.Close()
	whole, err := gpu.Alloc[float32](env.Session, 4*bt.Slots()+offset+1)
	if err != nil {
		return res, err
	}
	defer whole.Free()
	view, err := whole.View(offset, 4*bt.Slots())
	if err != nil {
		return res, err
	}
	if len(bt.Pred) > 0 {
		if err := view.CopyFromHost(bt.Pred); err != nil {
			return res, err
		}
	}
	pred := autograd.OnDevice("pred", view, false, bt.B, bt.M, 4)
	pred.RequiresGrad = true
	tp := autograd.NewTape()
	defer tp.Free()
	loss, err := tp.Apply(op, pred)
	if err != nil {
		return res, err
	}
	if err := tp.Backward(loss); err != nil {
		return res, err
	}
	defer pred.Grad.Free()
	res.Launches = op.Launches
	lv, err := loss.Values()
	if err != nil {
		return res, err
	}
	gv, err := pred.Grad.Values()
	if err != nil {
		return res, err
	}
	grad := make([]float64, 4*bt.Slots())
	want := Loss(bt.Shape, widen(bt.Pred), widen(bt.Target), bt.Counts, grad)
	res.Outcome = Outcome{Got: lv[0], Want: want, HasGrad: true,
		Loss: compareLoss(lv[0], want), Grad: CompareGrad(gv, grad, bt)}
	res.Loss = lv[0]
	return res, nil
}

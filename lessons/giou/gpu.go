package giou

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// Problem is a batch on the GPU, with the buffers each step writes, allocated on first use.
// Offset > 0 starts pred, target and dpred that many elements into their allocations, so that the
// vector kernels see pointers that are not aligned (the tests' misaligned views).
type Problem struct {
	Batch  *Batch
	Offset int
	env    *lab.Env
	bufs   map[string]any
	owned  []interface{ Free() error }
}

// NewProblem uploads a batch (validated first: nothing is launched on a bad batch).
func NewProblem(env *lab.Env, bt *Batch, offset int) (*Problem, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("giou: running kernels needs a GPU (%s)", env.Mode)
	}
	if err := bt.Validate(); err != nil {
		return nil, err
	}
	return &Problem{Batch: bt, Offset: offset, env: env, bufs: map[string]any{}}, nil
}

// Free releases every buffer.
func (p *Problem) Free() {
	for _, b := range p.owned {
		b.Free()
	}
	p.owned, p.bufs = nil, map[string]any{}
}

// buf returns the buffer called name of n elements (offset by off), uploading init or zeroing it
// the first time.
func buf[T gpu.Elem](p *Problem, name string, n, off int, init []T) (*gpu.Buffer[T], error) {
	if b, ok := p.bufs[name]; ok {
		return b.(*gpu.Buffer[T]), nil
	}
	whole, err := gpu.Alloc[T](p.env.Session, max(1, n+off))
	if err != nil {
		return nil, fmt.Errorf("giou %s: %w", name, err)
	}
	p.owned = append(p.owned, whole)
	if err := whole.Zero(); err != nil {
		return nil, err
	}
	b, err := whole.View(off, n)
	if err != nil {
		return nil, err
	}
	if init != nil && n > 0 {
		if err := b.CopyFromHost(init); err != nil {
			return nil, err
		}
	}
	p.bufs[name] = b
	return b, nil
}

// Inputs is the batch as the step of dtype d sees it, in float64: the 16-bit steps see the rounded boxes.
func (bt *Batch) Inputs(d DType) (pred, target []float64) {
	if d == F32 {
		return widen(bt.Pred), widen(bt.Target)
	}
	return d.Widen16(d.Round16(bt.Pred)), d.Widen16(d.Round16(bt.Target))
}

// args returns the arguments of one kernel on this problem.
func (p *Problem) args(st Step, kernel string) ([]any, error) {
	bt := p.Batch
	s := bt.Shape
	var err error
	get32 := func(name string, n, off int, init []float32) *gpu.Buffer[float32] {
		if err != nil {
			return nil
		}
		var b *gpu.Buffer[float32]
		b, err = buf(p, name, n, off, init)
		return b
	}
	counts, cerr := buf(p, "counts", s.B, 0, bt.Counts)
	if cerr != nil {
		return nil, cerr
	}
	var pred, target any
	if st.DType == F32 {
		pred, target = get32("pred", 4*s.Slots(), p.Offset, bt.Pred), get32("target", 4*s.Slots(), p.Offset, bt.Target)
	} else {
		var pb, tb *gpu.Buffer[uint16]
		if pb, err = buf(p, "pred"+string(st.DType), 4*s.Slots(), p.Offset, st.DType.Round16(bt.Pred)); err != nil {
			return nil, err
		}
		if tb, err = buf(p, "target"+string(st.DType), 4*s.Slots(), p.Offset, st.DType.Round16(bt.Target)); err != nil {
			return nil, err
		}
		pred, target = pb, tb
	}
	loss := get32("loss", 1, 0, nil)
	partial := get32("partial", 2*Grid(s.B), 0, nil)
	done, derr := buf[uint32](p, "done", 1, 0, nil)
	if derr != nil {
		return nil, derr
	}
	var out []any
	switch kernel {
	case "giou_article", "giou_article_skip":
		mask, merr := buf[uint8](p, "mask", s.Slots(), 0, nil)
		if merr != nil {
			return nil, merr
		}
		out = []any{pred, target, get32("giou", s.Slots(), 0, nil), mask}
	case "giou_article_reduce":
		mask, merr := buf[uint8](p, "mask", s.Slots(), 0, nil)
		if merr != nil {
			return nil, merr
		}
		out = []any{get32("giou", s.Slots(), 0, nil), mask, loss, int64(s.Slots())}
	case "giou_train_f32", "giou_train_f32_any", "giou_warp_train_f32", "giou_warp_train_f32_any":
		out = []any{pred, target, counts, partial, done, loss, get32("dpred", 4*s.Slots(), p.Offset, nil), int32(s.B), int32(s.M),
			float32(1 / math.Max(float64(bt.Total()), 1))}
	default:
		out = []any{pred, target, counts, partial, done, loss, int32(s.B), int32(s.M)}
	}
	return out, err
}

// aligned says whether the step's box buffers start on its vector width (16 bytes for float32
// boxes, 8 for 16-bit ones).
func (p *Problem) aligned(st Step) (bool, error) {
	args, err := p.args(st, st.Kernel)
	if err != nil {
		return false, err
	}
	w := uintptr(4 * st.DType.Size())
	for _, a := range args[:2] {
		if d, ok := a.(gpu.DevicePointer); ok && d.DevicePtr()%w != 0 {
			return false, nil
		}
	}
	if st.Kind == KindTrain {
		if d, ok := args[6].(gpu.DevicePointer); ok && d.DevicePtr()%w != 0 {
			return false, nil
		}
	}
	return true, nil
}

// Plan is the step's launch on this problem.
func (p *Problem) Plan(st Step) (Launch, error) {
	al, err := p.aligned(st)
	if err != nil {
		return Launch{}, err
	}
	return st.PlanFor(p.Batch.Shape, al)
}

// Launcher compiles the step (code, when not empty, replaces its file: a reader's edit) and returns
// a function that queues its kernels on the problem, and its launch. An empty batch launches nothing
// and writes a zero loss.
func (p *Problem) Launcher(st Step, code string) (func() error, Launch, error) {
	l, err := p.Plan(st)
	if err != nil {
		return nil, l, err
	}
	type call struct {
		k    *gpu.Kernel
		cfg  gpu.Config
		args []any
	}
	var calls []call
	for _, kl := range l.Kernels {
		src, err := st.source(kl, code)
		if err != nil {
			return nil, l, err
		}
		prog, err := p.env.Build(src, kl.Name)
		if err != nil {
			return nil, l, err
		}
		k, err := prog.Kernel(kl.Name)
		if err != nil {
			return nil, l, err
		}
		args, err := p.args(st, kl.Name)
		if err != nil {
			return nil, l, err
		}
		calls = append(calls, call{k, kl.Config, args})
	}
	if p.Batch.B == 0 || p.Batch.M == 0 {
		return func() error {
			if b, ok := p.bufs["loss"].(*gpu.Buffer[float32]); ok {
				return b.Zero()
			}
			return nil
		}, l, nil
	}
	return func() error {
		for _, c := range calls {
			if err := c.k.Launch(c.cfg, c.args...); err != nil {
				return err
			}
		}
		return nil
	}, l, nil
}

// Outcome is a step's check: the loss, and for the fused step the gradient.
type Outcome struct {
	Loss, Grad check.Result
	HasGrad    bool
	Got, Want  float64 // the loss
}

// OK reports whether every output passed.
func (o Outcome) OK() bool { return o.Loss.OK && (!o.HasGrad || o.Grad.OK) }

// Err names the first failing output.
func (o Outcome) Err() error {
	if err := o.Loss.Err(); err != nil {
		return fmt.Errorf("loss %.7g, want %.7g: %w", o.Got, o.Want, err)
	}
	if o.HasGrad {
		if err := o.Grad.Err(); err != nil {
			return fmt.Errorf("dL/dpred: %w", err)
		}
	}
	return nil
}

// String prints the comparisons.
func (o Outcome) String() string {
	s := fmt.Sprintf("loss %.7g (float64 %.7g): %v", o.Got, o.Want, o.Loss)
	if o.HasGrad {
		s += "; dL/dpred " + o.Grad.String()
	}
	return s
}

// Check runs the step once (code, when not empty, in place of its file) on NaN-poisoned outputs and
// compares them with the float64 reference: the loss, and for the fused step every element of
// dL/dpred (padded slots included), compared per box (times the box count).
func (p *Problem) Check(st Step, code string) (Outcome, Launch, error) {
	run, l, err := p.Launcher(st, code)
	if err != nil {
		return Outcome{}, l, err
	}
	return p.CheckRun(st, run, l)
}

// CheckRun is Check with a launch function of the caller's.
func (p *Problem) CheckRun(st Step, run func() error, l Launch) (Outcome, Launch, error) {
	var o Outcome
	if _, err := p.args(st, st.Kernel); err != nil {
		return o, l, err
	}
	loss := p.bufs["loss"].(*gpu.Buffer[float32])
	if err := loss.Poison(); err != nil {
		return o, l, err
	}
	var dpred *gpu.Buffer[float32]
	if st.Kind == KindTrain {
		if _, err := p.args(st, "giou_train_f32"); err != nil {
			return o, l, err
		}
		dpred = p.bufs["dpred"].(*gpu.Buffer[float32])
		if err := dpred.Poison(); err != nil {
			return o, l, err
		}
	}
	if err := run(); err != nil {
		return o, l, err
	}
	if err := p.env.Session.Synchronize(); err != nil {
		return o, l, fmt.Errorf("%s: %w", st.Name, err)
	}
	bt := p.Batch
	pred, target := bt.Inputs(st.DType)
	grad := make([]float64, len(pred))
	want := Loss(bt.Shape, pred, target, bt.Counts, grad)
	got, err := loss.ToHost()
	if err != nil {
		return o, l, err
	}
	o.Got, o.Want = float64(got[0]), want
	o.Loss = check.Compare([]float64{float64(got[0])}, []float64{want}, LossTol)
	if dpred != nil {
		o.HasGrad = true
		g, err := dpred.ToHost()
		if err != nil {
			return o, l, err
		}
		o.Grad = CompareGrad(widen(g), grad, bt)
	}
	return o, l, nil
}

// CompareGrad compares a gradient with the reference per box: both times the box count total, so
// that the values are O(1/width) whatever the batch, under GradTolerance(bt).
func CompareGrad(got, want []float64, bt *Batch) check.Result {
	n := math.Max(float64(bt.Total()), 1)
	g, w := make([]float64, len(got)), make([]float64, len(want))
	for i := range got {
		g[i] = got[i] * n
	}
	for i := range want {
		w[i] = want[i] * n
	}
	return check.Compare(g, w, GradTolerance(bt))
}

// GradTolerance is the check of the (count-scaled) gradient on batch bt: GradTol with an absolute
// floor for tiny references. Each coordinate's gradient adds three terms whose sizes are fixed by
// the box (see 5_fused.cu): side(pred) (I/Uc^2 + 1/Ec), side(inter) (1/Uc + I/Uc^2 + 1/Ec) and
// side(enc) (1/Ec + |E - U|/Ec^2). Each is a chain of a few float32 roundings (8 counted), so its
// error has a standard deviation of about check.SumFloor(u, 8, T) for T their sum; the floor is
// the RMS of that over the valid boxes. For boxes far apart the terms (about 1e-3) cancel to a
// gradient near 1e-6: a correct kernel was 4.2e-5 relative L2 off there (max 6e-11 absolute),
// which the floor admits; on the article's workload it stays below FP32's Abs.
func GradTolerance(bt *Batch) check.Tolerance {
	var q float64
	n := 0
	for b, c := range bt.Counts {
		for j := 0; j < int(c); j++ {
			o := (b*bt.M + j) * 4
			t := boxTerms(bt.Pred[o:o+4], bt.Target[o:o+4])
			s := check.SumFloor(check.U32, 8, t)
			if !math.IsInf(s, 0) && !math.IsNaN(s) {
				q += s * s
				n++
			}
		}
	}
	if n == 0 {
		return GradTol
	}
	return GradTol.WithFloor(math.Sqrt(q/float64(n)), "a few float32 roundings of each box's three gradient terms")
}

// boxTerms is the sum of the sizes of the three terms of a box's GIoU gradient (GradTolerance).
func boxTerms(p, t []float32) float64 {
	x1, y1, x2, y2 := float64(p[0]), float64(p[1]), float64(p[2]), float64(p[3])
	a1, b1, a2, b2 := float64(t[0]), float64(t[1]), float64(t[2]), float64(t[3])
	aw, ah := math.Abs(x2-x1), math.Abs(y2-y1)
	iw, ih := math.Max(math.Min(x2, a2)-math.Max(x1, a1), 0), math.Max(math.Min(y2, b2)-math.Max(y1, b1), 0)
	ew, eh := math.Max(math.Max(x2, a2)-math.Min(x1, a1), 0), math.Max(math.Max(y2, b2)-math.Min(y1, b1), 0)
	inter, enc := iw*ih, ew*eh
	uni := (x2-x1)*(y2-y1) + (a2-a1)*(b2-b1) - inter
	uc, ec := math.Max(uni, Eps), math.Max(enc, Eps)
	return math.Max(aw, ah)*(inter/(uc*uc)+1/ec) + math.Max(iw, ih)*(1/uc+inter/(uc*uc)+1/ec) +
		math.Max(ew, eh)*(1/ec+math.Abs(enc-uni)/(ec*ec))
}

// Work is the step's minimum traffic on the batch: the valid boxes read once (pred and target), the
// counts, and for the fused step the gradient written (B*M*4 floats).
func (st Step) Work(bt *Batch) bench.Work {
	bytes := float64(bt.Total())*8*float64(st.DType.Size()) + 4*float64(bt.B)
	if st.Kind == KindTrain {
		bytes += 16 * float64(bt.Slots())
	}
	return bench.Work{Bytes: bytes, FLOPs: 40 * float64(bt.Total())}
}

// Measure checks a step (code in place of its file when not empty), then times it, and returns its
// record (case = the step's kind).
func (p *Problem) Measure(st Step, code, variant string) (record.Record, error) {
	if variant == "" {
		variant = st.Name
	}
	bt := p.Batch
	rec := record.Record{Case: string(st.Kind), Variant: variant, Kind: "kernel", DType: string(st.DType), Shape: bt.Shape.String(),
		Size: int64(bt.B), Tol: LossTol.Name}
	res, l, err := p.Check(st, code)
	if err != nil {
		return rec, err
	}
	rec.RelL2, rec.MaxAbs, rec.Correct = finite(res.Loss.RelL2), res.Loss.MaxAbs, res.OK()
	if res.HasGrad {
		rec.RelL2 = math.Max(rec.RelL2, finite(res.Grad.RelL2))
	}
	rec.Note = l.String()
	if !res.OK() {
		return rec, fmt.Errorf("giou %s on %v: %w", variant, bt.Shape, res.Err())
	}
	run, _, err := p.Launcher(st, code)
	if err != nil {
		return rec, err
	}
	return p.env.Measure(rec, st.Work(bt), run)
}

// Reports are the compile reports of the step's kernels on this problem.
func (p *Problem) Reports(st Step, code string) ([]record.KernelReport, error) {
	l, err := p.Plan(st)
	if err != nil {
		return nil, err
	}
	return compileReports(p.env, st, l, code)
}

func compileReports(env *lab.Env, st Step, l Launch, code string) ([]record.KernelReport, error) {
	var out []record.KernelReport
	for _, kl := range l.Kernels {
		src, err := st.source(kl, code)
		if err != nil {
			return nil, err
		}
		prog, err := env.Build(src, kl.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, prog.Report(kl.Name, kl.Config.Block.Count(), 0))
	}
	return out, nil
}

// finite keeps JSON happy: Inf and NaN become -1 (the record's Correct says it failed).
func finite(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return -1
	}
	return v
}

func compareLoss(got, want float64) check.Result {
	return check.Compare([]float64{got}, []float64{want}, LossTol)
}

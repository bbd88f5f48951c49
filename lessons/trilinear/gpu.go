package trilinear

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// Problem is the op's inputs on the GPU at one shape, with the buffers each kind of step writes,
// allocated on first use. Offset > 0 starts every buffer that many elements into its allocation, so
// that the vector kernels see pointers that are not 16-byte aligned (the tests' misaligned views).
type Problem struct {
	Shape  Shape
	In     Inputs
	Offset int
	// Rows are the points whose outputs Check compares with the reference (all when nil).
	Rows  []int
	env   *lab.Env
	f32   map[string]*gpu.Buffer[float32]
	u16   map[string]*gpu.Buffer[uint16]
	owned []interface{ Free() error }
	sub   *Inputs // the inputs of the checked rows, as a compact problem
}

// NewProblem uploads fresh inputs (points in [lo, hi]) for shape s. checkRows > 0 compares only that
// many random points' outputs (the article's shape has 16M outputs and 134M feature gradients).
func NewProblem(env *lab.Env, s Shape, seed uint64, lo, hi float64, checkRows, offset int) (*Problem, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("trilinear: running kernels needs a GPU (%s)", env.Mode)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	p := &Problem{Shape: s, In: NewInputs(s, seed, lo, hi), Offset: offset, env: env,
		f32: map[string]*gpu.Buffer[float32]{}, u16: map[string]*gpu.Buffer[uint16]{}}
	if checkRows > 0 && checkRows < s.N {
		p.Rows = SampleRows(s, checkRows, seed+1)
	}
	return p, nil
}

// Free releases every buffer.
func (p *Problem) Free() {
	for _, b := range p.owned {
		b.Free()
	}
	p.owned, p.f32, p.u16 = nil, map[string]*gpu.Buffer[float32]{}, map[string]*gpu.Buffer[uint16]{}
}

// buf32 returns the float32 buffer called name, allocating n elements (and uploading init) the first time.
func (p *Problem) buf32(name string, n int, init []float32) (*gpu.Buffer[float32], error) {
	if b, ok := p.f32[name]; ok {
		return b, nil
	}
	whole, err := gpu.Alloc[float32](p.env.Session, n+p.Offset)
	if err != nil {
		return nil, fmt.Errorf("trilinear %s: %w", name, err)
	}
	p.owned = append(p.owned, whole)
	b, err := whole.View(p.Offset, n)
	if err != nil {
		return nil, err
	}
	if init != nil {
		if err := b.CopyFromHost(init); err != nil {
			return nil, err
		}
	}
	p.f32[name] = b
	return b, nil
}

func (p *Problem) buf16(name string, n int, init []uint16) (*gpu.Buffer[uint16], error) {
	if b, ok := p.u16[name]; ok {
		return b, nil
	}
	whole, err := gpu.Alloc[uint16](p.env.Session, n+p.Offset)
	if err != nil {
		return nil, fmt.Errorf("trilinear %s: %w", name, err)
	}
	p.owned = append(p.owned, whole)
	b, err := whole.View(p.Offset, n)
	if err != nil {
		return nil, err
	}
	if init != nil {
		if err := b.CopyFromHost(init); err != nil {
			return nil, err
		}
	}
	p.u16[name] = b
	return b, nil
}

// args returns the kernel arguments of a step's kind, and the outputs it writes (to poison).
func (p *Problem) args(st Step) (args []any, outs []string, err error) {
	s := p.Shape
	get := func(name string, n int, init []float32) *gpu.Buffer[float32] {
		if err != nil {
			return nil
		}
		var b *gpu.Buffer[float32]
		b, err = p.buf32(name, n, init)
		return b
	}
	points := get("points", s.PointsLen(), p.In.Points)
	dims := []any{int32(s.N), int32(s.F)}
	switch st.Kind {
	case KindForward:
		if st.DType != F32 {
			var f, o *gpu.Buffer[uint16]
			if f, err = p.buf16("feats"+string(st.DType), s.FeatsLen(), st.DType.Round16(p.In.Feats)); err != nil {
				return nil, nil, err
			}
			if o, err = p.buf16("out"+string(st.DType), s.OutLen(), nil); err != nil {
				return nil, nil, err
			}
			return append([]any{f, points, o}, dims...), []string{"out" + string(st.DType)}, err
		}
		args = []any{get("feats", s.FeatsLen(), p.In.Feats), points, get("out", s.OutLen(), nil)}
		outs = []string{"out"}
	case KindBwdFeats:
		args = []any{get("g", s.OutLen(), p.In.G), points, get("dfeats", s.FeatsLen(), nil)}
		outs = []string{"dfeats"}
	case KindBwdPoints:
		args = []any{get("feats", s.FeatsLen(), p.In.Feats), points, get("g", s.OutLen(), p.In.G), get("dpoints", s.PointsLen(), nil)}
		outs = []string{"dpoints"}
	case KindTrain:
		args = []any{get("feats", s.FeatsLen(), p.In.Feats), points, get("target", s.OutLen(), p.In.Target),
			get("dfeats", s.FeatsLen(), nil), get("dpoints", s.PointsLen(), nil), get("loss", s.N, nil)}
		outs = []string{"dfeats", "dpoints", "loss"}
	default:
		return nil, nil, fmt.Errorf("trilinear: unknown kind %q", st.Kind)
	}
	return append(args, dims...), outs, err
}

// aligned says whether every buffer of the step's kind starts on a 16-byte boundary.
func (p *Problem) aligned(args []any) bool {
	for _, a := range args {
		if d, ok := a.(gpu.DevicePointer); ok && d.DevicePtr()%16 != 0 {
			return false
		}
	}
	return true
}

// Plan is the step's launch on this problem.
func (p *Problem) Plan(st Step) (Launch, error) {
	args, _, err := p.args(st)
	if err != nil {
		return Launch{}, err
	}
	return st.PlanFor(p.Shape, p.env.Session.Device, p.aligned(args))
}

// Launcher compiles the step (code, when not empty, replaces its file: a reader's edit) and returns
// a function that queues it on the problem, and its launch. An empty shape launches nothing.
func (p *Problem) Launcher(st Step, code string) (func() error, Launch, *lab.Program, error) {
	args, outs, err := p.args(st)
	if err != nil {
		return nil, Launch{}, nil, err
	}
	l, err := st.PlanFor(p.Shape, p.env.Session.Device, p.aligned(args))
	if err != nil {
		return nil, l, nil, err
	}
	src, err := st.source(l, code)
	if err != nil {
		return nil, l, nil, err
	}
	prog, err := p.env.Build(src, l.Kernel)
	if err != nil {
		return nil, l, nil, err
	}
	k, err := prog.Kernel(l.Kernel)
	if err != nil {
		return nil, l, prog, err
	}
	if p.Shape.Empty() {
		// No kernel runs; an output that is not empty (dpoints and the loss when F = 0: sums of
		// no terms) is zero.
		return func() error {
			for _, o := range outs {
				if b, ok := p.f32[o]; ok && b.Len() > 0 {
					if err := b.Zero(); err != nil {
						return err
					}
				}
			}
			return nil
		}, l, prog, nil
	}
	return func() error { return k.Launch(l.Config, args...) }, l, prog, nil
}

// Named is one output's comparison.
type Named struct {
	Name string
	check.Result
}

// Outcome is a step's check: one comparison per output; OK when all pass.
type Outcome []Named

// OK reports whether every output passed.
func (o Outcome) OK() bool {
	for _, n := range o {
		if !n.Result.OK {
			return false
		}
	}
	return len(o) > 0
}

// Worst is the comparison with the largest relative L2 error (a failing one first).
func (o Outcome) Worst() check.Result {
	var w check.Result
	for i, n := range o {
		if i == 0 || (!n.Result.OK && w.OK) || (n.Result.OK == w.OK && !(n.RelL2 <= w.RelL2)) {
			w = n.Result
		}
	}
	return w
}

// Err names the first failing output.
func (o Outcome) Err() error {
	for _, n := range o {
		if err := n.Result.Err(); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
	}
	return nil
}

// String prints every comparison.
func (o Outcome) String() string {
	s := ""
	for i, n := range o {
		if i > 0 {
			s += "; "
		}
		s += n.Name + " " + n.Result.String()
	}
	return s
}

// Checked says which outputs Check compares.
func (p *Problem) Checked() string {
	if p.Rows == nil {
		return fmt.Sprintf("every output of %v", p.Shape)
	}
	return fmt.Sprintf("the outputs of %d random points of %d", len(p.Rows), p.Shape.N)
}

// subInputs gathers the checked rows' inputs as a compact problem of len(rows) points, in float64.
func (p *Problem) subInputs(d DType) (s Shape, feats, points, g, target []float64) {
	rows := rowsOrAll(p.Shape, p.Rows)
	F := p.Shape.F
	s = Shape{N: len(rows), F: F}
	feats = make([]float64, 0, s.FeatsLen())
	for _, n := range rows {
		part := p.In.Feats[n*8*F : (n+1)*8*F]
		if d != F32 {
			feats = append(feats, d.Widen16(d.Round16(part))...)
		} else {
			feats = append(feats, widen(part)...)
		}
		points = append(points, widen(p.In.Points[3*n:3*n+3])...)
		g = append(g, widen(p.In.G[n*F:(n+1)*F])...)
		target = append(target, widen(p.In.Target[n*F:(n+1)*F])...)
	}
	return s, feats, points, g, target
}

// gatherRows picks the rows of `width` values of the checked points from a downloaded output.
func (p *Problem) gatherRows(all []float64, width int) []float64 {
	if p.Rows == nil {
		return all
	}
	out := make([]float64, 0, len(p.Rows)*width)
	for _, n := range p.Rows {
		out = append(out, all[n*width:(n+1)*width]...)
	}
	return out
}

// read downloads an output as float64.
func (p *Problem) read(name string, d DType) ([]float64, error) {
	if b, ok := p.u16[name]; ok {
		h, err := b.ToHost()
		if err != nil {
			return nil, err
		}
		return d.Widen16(h), nil
	}
	b, ok := p.f32[name]
	if !ok {
		return nil, fmt.Errorf("trilinear: no output %s", name)
	}
	f, err := b.ToHost()
	if err != nil {
		return nil, err
	}
	return widen(f), nil
}

// poison fills an output with NaN (0xFFFF is NaN in both half and bfloat16).
func (p *Problem) poison(name string) error {
	if b, ok := p.u16[name]; ok {
		nan := make([]uint16, b.Len())
		for i := range nan {
			nan[i] = 0xFFFF
		}
		return b.CopyFromHost(nan)
	}
	if b, ok := p.f32[name]; ok {
		return b.Poison()
	}
	return fmt.Errorf("trilinear: no output %s", name)
}

// Check runs the step once (code, when not empty, in place of its file) on NaN-poisoned outputs
// and compares them with the float64 reference on the checked rows.
func (p *Problem) Check(st Step, code string) (Outcome, Launch, error) {
	run, l, _, err := p.Launcher(st, code)
	if err != nil {
		return nil, l, err
	}
	return p.CheckRun(st, run, l)
}

// CheckRun is Check with a launch function of the caller's (an exercise's kernel with the step's
// arguments).
func (p *Problem) CheckRun(st Step, run func() error, l Launch) (Outcome, Launch, error) {
	_, outs, err := p.args(st)
	if err != nil {
		return nil, l, err
	}
	for _, o := range outs {
		if err := p.poison(o); err != nil {
			return nil, l, err
		}
	}
	if err := run(); err != nil {
		return nil, l, err
	}
	if err := p.env.Session.Synchronize(); err != nil {
		return nil, l, fmt.Errorf("%s: %w", st.Name, err)
	}
	s, feats, points, g, target := p.subInputs(st.DType)
	F := p.Shape.F
	var res Outcome
	compare := func(name string, width int, want []float64, tol check.Tolerance) error {
		got, err := p.read(name, st.DType)
		if err != nil {
			return err
		}
		res = append(res, Named{name, check.Compare(p.gatherRows(got, width), want, tol)})
		return nil
	}
	switch st.Kind {
	case KindForward:
		want := Forward(s, feats, points)
		if st.DType != F32 { // the stored output is the reference rounded once more
			err = compare("out"+string(st.DType), F, want, st.Tol)
		} else {
			err = compare("out", F, want, st.Tol)
		}
	case KindBwdFeats:
		err = compare("dfeats", 8*F, BackwardFeats(s, points, g, nil), st.Tol)
	case KindBwdPoints:
		err = compare("dpoints", 3, BackwardPoints(s, feats, points, g, nil), withPointsFloor(st.Tol, F, feats, g))
	case KindTrain:
		loss, r := TrainLoss(s, feats, points, target, nil)
		if err = compare("loss", 1, loss, st.Tol); err == nil {
			if err = compare("dfeats", 8*F, BackwardFeats(s, points, r, nil), st.Tol); err == nil {
				err = compare("dpoints", 3, BackwardPoints(s, feats, points, r, nil), withPointsFloor(st.Tol, F, feats, r))
			}
		}
	}
	return res, l, err
}

// withPointsFloor is tol (a step's, or an edited kernel's) with PointsTolerance's floor for F
// channels: the points gradient is a sum of 8F terms, whatever the step.
func withPointsFloor(tol check.Tolerance, F int, feats, g []float64) check.Tolerance {
	return tol.WithFloor(PointsTolerance(F, feats, g).Floor, fmt.Sprintf("float32 sum of 8F = %d terms", 8*F))
}

// Work is the step's minimum traffic and FLOPs on shape s.
func (st Step) Work(s Shape) bench.Work {
	switch st.Kind {
	case KindBwdFeats:
		return BackwardFeatsWork(s)
	case KindBwdPoints:
		return BackwardPointsWork(s)
	case KindTrain:
		return TrainWork(s)
	}
	return ForwardWork(s, st.DType.Size())
}

// Measure checks a step (code in place of its file when not empty), then times it, and returns its
// record (case = the step's kind).
func (p *Problem) Measure(st Step, code, variant string) (record.Record, error) {
	if variant == "" {
		variant = st.Name
	}
	rec := record.Record{Case: string(st.Kind), Variant: variant, Kind: "kernel", DType: string(st.DType), Shape: p.Shape.String(),
		Size: int64(p.Shape.N), Tol: st.Tol.Name}
	res, l, err := p.Check(st, code)
	if err != nil {
		return rec, err
	}
	w := res.Worst()
	rec.RelL2, rec.MaxAbs, rec.Correct = finite(w.RelL2), w.MaxAbs, res.OK()
	rec.Note = fmt.Sprintf("%s, grid %v x block %v", l.Kernel, l.Config.Grid, l.Config.Block)
	if l.Note != "" {
		rec.Note += "; " + l.Note
	}
	if !res.OK() {
		return rec, fmt.Errorf("trilinear %s on %v: %w", variant, p.Shape, res.Err())
	}
	run, _, _, err := p.Launcher(st, code)
	if err != nil {
		return rec, err
	}
	return p.env.Measure(rec, st.Work(p.Shape), run)
}

// Report is the compile report of the step's launch on this problem.
func (p *Problem) Report(st Step) (record.KernelReport, error) {
	_, l, prog, err := p.Launcher(st, "")
	if err != nil {
		return record.KernelReport{}, err
	}
	return prog.Report(l.Kernel, l.Config.Block.Count(), l.Config.SharedBytes), nil
}

// finite keeps JSON happy: Inf and NaN become -1 (the record's Correct says it failed).
func finite(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return -1
	}
	return v
}

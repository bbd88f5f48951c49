package conv

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// Problem is a layer's inputs on the GPU, with the conv and pooled outputs allocated on first use.
type Problem struct {
	Shape Shape
	In    Inputs
	// Checked is how many outputs Check compares with the float64 reference (drawn at random), or
	// 0 for every output. Every output is always scanned for NaN (the poison of an unwritten one).
	Checked int
	Seed    uint64
	env     *lab.Env
	x, w, b *gpu.Buffer[float32]
	y, pool *gpu.Buffer[float32]
	refs    map[string][]float64 // float64 references of the sampled outputs, by output and ReLU
	// relu and bias2 are the epilogue after the conv's bias (SetEpilogue).
	relu  bool
	bias2 *gpu.Buffer[float32]
}

// SetEpilogue makes the steps built after it write y = max(conv + bias, 0) + bias2[k] (relu set;
// bias2 per filter, nil for none) instead of conv + bias: KernelBench's level-2 conv + ReLU + bias
// in one pass over y. Lesson 05's steps marked Epilogue take it through their files' EPILOGUE2
// build, lesson 08's conv steps (whose problem embeds this one) through their kernels' epilogue
// arguments (EpilogueArgs). Check compares with the plain conv's reference, so it refuses a problem
// with an epilogue (its caller checks y against its own reference).
func (p *Problem) SetEpilogue(relu bool, bias2 *gpu.Buffer[float32]) error {
	if bias2 != nil && bias2.Len() < p.Shape.K {
		return fmt.Errorf("conv %v: the second bias has %d values, the layer %d filters", p.Shape, bias2.Len(), p.Shape.K)
	}
	p.relu, p.bias2 = relu, bias2
	return nil
}

// epilogue reports whether the problem has an epilogue after the conv's bias.
func (p *Problem) epilogue() bool { return p.relu || p.bias2 != nil }

// HasEpilogue reports whether SetEpilogue gave the problem a ReLU or a second bias.
func (p *Problem) HasEpilogue() bool { return p.epilogue() }

// EpilogueArgs are the epilogue's kernel arguments: the second bias (a null pointer for none) and
// the ReLU flag (1 on, 0 off).
func (p *Problem) EpilogueArgs() (bias2 any, relu int32) {
	bias2 = uintptr(0)
	if p.bias2 != nil {
		bias2 = p.bias2
	}
	if p.relu {
		relu = 1
	}
	return bias2, relu
}

// NewProblem uploads fresh inputs for shape s; checked > 0 compares that many random outputs
// (the article's layer has 29M conv outputs of 363 taps each), 0 every output.
func NewProblem(env *lab.Env, s Shape, seed uint64, checked int) (*Problem, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("conv: running kernels needs a GPU (%s)", env.Mode)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	p := &Problem{Shape: s, In: NewInputs(s, seed), Checked: checked, Seed: seed, env: env, refs: map[string][]float64{}}
	var err error
	if p.x, err = gpu.Upload(env.Session, p.In.X); err != nil {
		return nil, fmt.Errorf("conv: uploading x: %w", err)
	}
	if p.w, err = gpu.Upload(env.Session, p.In.W); err != nil {
		p.Free()
		return nil, err
	}
	if p.b, err = gpu.Upload(env.Session, p.In.B); err != nil {
		p.Free()
		return nil, err
	}
	return p, nil
}

// Free releases every buffer.
func (p *Problem) Free() {
	for _, b := range []*gpu.Buffer[float32]{p.x, p.w, p.b, p.y, p.pool} {
		if b != nil {
			b.Free()
		}
	}
	p.x, p.w, p.b, p.y, p.pool = nil, nil, nil, nil, nil
}

// out returns the step's output buffer, allocated on first use.
func (p *Problem) out(st Step) (*gpu.Buffer[float32], error) {
	var err error
	if st.Fused {
		if p.pool == nil {
			p.pool, err = gpu.Alloc[float32](p.env.Session, max(1, p.Shape.PoolLen()))
		}
		return p.pool, err
	}
	if p.y == nil {
		p.y, err = gpu.Alloc[float32](p.env.Session, p.Shape.YLen())
	}
	return p.y, err
}

// Args are a step's kernel arguments on this problem: x, w, bias, the output, the shape's ints and
// the launch's extra ints.
func (p *Problem) Args(st Step, l Launch) ([]any, error) {
	o, err := p.out(st)
	if err != nil {
		return nil, err
	}
	s := p.Shape
	args := []any{p.x, p.w, p.b, o}
	for _, v := range []int{s.N, s.C, s.H, s.W, s.K, s.R, s.S, s.P, s.OH(), s.OW()} {
		args = append(args, int32(v))
	}
	for _, v := range l.Extra {
		args = append(args, v)
	}
	if p.epilogue() { // EPILOGUE2's bias2 and relu
		bias2, relu := p.EpilogueArgs()
		args = append(args, bias2, relu)
	}
	return args, nil
}

// Build compiles the step (code, when not empty, in place of its file) for this GPU and returns
// its program and launch on this problem, or the plan's refusal.
func (p *Problem) Build(st Step, code string) (*lab.Program, Launch, error) {
	l, err := st.PlanFor(p.Shape, p.env.Session.Device)
	if err != nil {
		return nil, l, err
	}
	src, err := st.Source(code)
	if err != nil {
		return nil, l, err
	}
	opts := compileOpts(st)
	if p.epilogue() {
		if !st.Epilogue || st.Fused {
			return nil, l, fmt.Errorf("conv %s: the problem has a ReLU or a second bias after the conv, and this step has no EPILOGUE2 build (steps 3 and 5 have)", st.Name)
		}
		opts.Defines = append(append([]string{}, opts.Defines...), "EPILOGUE2")
	}
	prog, err := p.env.BuildWith(src, opts, l.Kernel)
	return prog, l, err
}

// Launcher returns a function that queues the step on the problem (the memset of the pooled
// output first, for the atomicMax step), and its launch.
func (p *Problem) Launcher(st Step, code string) (func() error, Launch, *lab.Program, error) {
	prog, l, err := p.Build(st, code)
	if err != nil {
		return nil, l, prog, err
	}
	k, err := prog.Kernel(l.Kernel)
	if err != nil {
		return nil, l, prog, err
	}
	return p.LaunchWith(st, k, l)
}

// LaunchWith is Launcher for a kernel of the caller's (an exercise's) with the step's arguments.
func (p *Problem) LaunchWith(st Step, k *gpu.Kernel, l Launch) (func() error, Launch, *lab.Program, error) {
	args, err := p.Args(st, l)
	if err != nil {
		return nil, l, nil, err
	}
	o := args[3].(*gpu.Buffer[float32])
	return func() error {
		if st.Zero {
			if err := o.Zero(); err != nil {
				return err
			}
		}
		return k.Launch(l.Config, args...)
	}, l, nil, nil
}

// reference returns the float64 reference of the checked outputs of a conv (fused false) or of
// the pooled layer, and their indices.
func (p *Problem) reference(fused, relu bool) ([]int, []float64) {
	s := p.Shape
	n := s.YLen()
	if fused {
		n = s.PoolLen()
	}
	idx := Sample(n, p.count(n), p.Seed+11)
	key := fmt.Sprint(fused, relu)
	if r, ok := p.refs[key]; ok {
		return idx, r
	}
	want := make([]float64, len(idx))
	parallel(len(idx), func(i int) {
		if fused {
			want[i] = poolFlat(s, p.In, idx[i], relu)
		} else {
			want[i] = convFlat(s, p.In, idx[i])
		}
	})
	p.refs[key] = want
	return idx, want
}

func (p *Problem) count(n int) int {
	if p.Checked <= 0 {
		return n
	}
	return min(n, p.Checked)
}

// CheckedLabel says which outputs Check compares.
func (p *Problem) CheckedLabel(fused bool) string {
	n := p.Shape.YLen()
	what := "conv outputs"
	if fused {
		n, what = p.Shape.PoolLen(), "pooled outputs"
	}
	if c := p.count(n); c < n {
		return fmt.Sprintf("%d random %s of %d (all scanned for NaN)", c, what, n)
	}
	return fmt.Sprintf("all %d %s", n, what)
}

// Check runs the step once (code, when not empty, in place of its file) on a NaN-poisoned output
// and compares it with the float64 reference.
func (p *Problem) Check(st Step, code string) (check.Result, Launch, error) {
	run, l, _, err := p.Launcher(st, code)
	if err != nil {
		return check.Result{}, l, err
	}
	return p.CheckRun(st, run, l)
}

// CheckRun is Check with a launch function of the caller's.
func (p *Problem) CheckRun(st Step, run func() error, l Launch) (check.Result, Launch, error) {
	if p.epilogue() {
		return check.Result{}, l, fmt.Errorf("conv %s on %v: the problem has a ReLU or a second bias in its epilogue; the reference is the plain conv", st.Name, p.Shape)
	}
	o, err := p.out(st)
	if err != nil {
		return check.Result{}, l, err
	}
	if err := o.Poison(); err != nil {
		return check.Result{}, l, err
	}
	if err := run(); err != nil {
		return check.Result{}, l, err
	}
	if err := p.env.Session.Synchronize(); err != nil {
		return check.Result{}, l, fmt.Errorf("%s: %w", st.Name, err)
	}
	got, err := o.ToHost()
	if err != nil {
		return check.Result{}, l, err
	}
	n := p.Shape.YLen()
	if st.Fused {
		n = p.Shape.PoolLen()
	}
	idx, want := p.reference(st.Fused, st.relu())
	g := make([]float64, len(idx))
	for i, j := range idx {
		g[i] = float64(got[j])
	}
	res := check.Compare(g, want, st.Tol)
	// An unwritten output stays NaN: scan the ones the sample did not compare.
	for i, v := range got[:n] {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			res.NonFinite++
			if res.FirstBad < 0 || i < res.FirstBad {
				res.FirstBad = i
			}
			res.OK = false
			break
		}
	}
	return res, l, nil
}

// Measure checks a step (code in place of its file when not empty), then times the run it checked
// (MeasureRun), and returns its record under caseName.
func (p *Problem) Measure(st Step, code, caseName, variant string) (record.Record, error) {
	run, l, _, err := p.Launcher(st, code)
	if err != nil {
		return p.recordOf(st, caseName, variant), err
	}
	return p.MeasureRun(st, run, l, caseName, variant)
}

// recordOf is the record of st under caseName (variant, when not empty, in place of its name), before
// any check or time.
func (p *Problem) recordOf(st Step, caseName, variant string) record.Record {
	if variant == "" {
		variant = st.Name
	}
	return record.Record{Case: caseName, Variant: variant, Kind: "kernel", DType: st.DType, Shape: p.Shape.Short(), Tol: st.Tol.Name}
}

// MeasureRun checks run (the launches of st's computation, l its main launch) once on a
// NaN-poisoned output against the float64 reference, then times that same run, and returns its
// record under caseName. A failed check is an error, and nothing is timed.
func (p *Problem) MeasureRun(st Step, run func() error, l Launch, caseName, variant string) (record.Record, error) {
	rec := p.recordOf(st, caseName, variant)
	w := Work(p.Shape)
	if st.Fused {
		w = FusedWork(p.Shape)
	}
	res, l, err := p.CheckRun(st, run, l)
	if err != nil {
		return rec, err
	}
	rec.RelL2, rec.MaxAbs, rec.Correct = finite(res.RelL2), res.MaxAbs, res.OK
	rec.Note = fmt.Sprintf("%s, grid %v x block %v, %d B dynamic shared", l.Kernel, l.Config.Grid, l.Config.Block, l.Config.SharedBytes)
	if l.Note != "" {
		rec.Note += "; " + l.Note
	}
	if !res.OK {
		return rec, fmt.Errorf("conv %s on %v: %w", rec.Variant, p.Shape, res.Err())
	}
	return p.env.Measure(rec, w, run)
}

// Buffers are the layer's inputs on the GPU: x (N, C, H, W), the filters (K, C, R, R) and the bias.
func (p *Problem) Buffers() (x, w, b *gpu.Buffer[float32]) { return p.x, p.w, p.b }

// Reference is the sampled conv outputs' flat NCHW indices and their float64 reference (the ones
// Check compares), computed once.
func (p *Problem) Reference() ([]int, []float64) { return p.reference(false, Step{}.relu()) }

// Output is the conv output y (N, K, OH, OW), allocated on first use.
func (p *Problem) Output() (*gpu.Buffer[float32], error) { return p.out(Step{}) }

// Report is the compile report of the step's launch on this problem.
func (p *Problem) Report(st Step) (record.KernelReport, error) {
	prog, l, err := p.Build(st, "")
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

package rwkv

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// Problem is one forward problem on the GPU: inputs uploaded, the output allocated, and the float64
// reference of the rows that are checked (all rows, or a stated random sample on large shapes).
type Problem struct {
	Shape Shape
	Eps   float64
	W, K  []float32 // host inputs
	// Rows are the (b*C + c) rows compared with the reference; Sampled says they are not all rows.
	Rows    []int
	Sampled bool
	Wd, Kd  *gpu.Buffer[float32]
	Out     *gpu.Buffer[float32]
	want    []float64
	env     *lab.Env
}

// NewProblem draws the inputs of shape s from seed, uploads them and computes the reference on
// checkRows random rows (all rows when checkRows <= 0 or >= B*C).
func NewProblem(env *lab.Env, s Shape, seed uint64, checkRows int) (*Problem, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if !env.GPU() {
		return nil, fmt.Errorf("rwkv: running kernels needs a GPU (%s)", env.Mode)
	}
	p := &Problem{Shape: s, Eps: Eps, env: env}
	p.W, p.K = Inputs(s, seed)
	if checkRows > 0 && checkRows < s.Rows() {
		p.Rows, p.Sampled = SampleRows(s, checkRows, seed), true
	} else {
		p.Rows = AllRows(s)
	}
	p.want = ForwardRows(s, p.W, p.K, p.Eps, p.Rows)
	var err error
	if p.Wd, err = gpu.Upload(env.Session, p.W); err != nil {
		return nil, fmt.Errorf("rwkv %v: uploading w: %w", s, err)
	}
	if p.Kd, err = gpu.Upload(env.Session, p.K); err != nil {
		p.Free()
		return nil, fmt.Errorf("rwkv %v: uploading k: %w", s, err)
	}
	if p.Out, err = gpu.Alloc[float32](env.Session, s.Len()); err != nil {
		p.Free()
		return nil, fmt.Errorf("rwkv %v: allocating out: %w", s, err)
	}
	return p, nil
}

// Free releases the problem's device buffers.
func (p *Problem) Free() {
	if p == nil {
		return
	}
	p.Wd.Free()
	p.Kd.Free()
	p.Out.Free()
}

// Checked says which rows the check covers, for notes and tables.
func (p *Problem) Checked() string {
	if p.Sampled {
		return fmt.Sprintf("%d random (b,c) rows of %d, every t", len(p.Rows), p.Shape.Rows())
	}
	return "every output"
}

// Plan validates the step on the problem's shape and device, and returns its launch.
func (p *Problem) Plan(st Step) (Launch, error) {
	if err := p.Shape.Validate(); err != nil {
		return Launch{}, err
	}
	return st.Plan(p.Shape, p.env.Session.Device)
}

// Launcher compiles a step (code, when not empty, replaces its source: a reader's kernel) and returns
// a function that queues one forward on p, with its program and launch. Shapes the kernel cannot take
// are refused here, before any launch.
func (p *Problem) Launcher(st Step, code string) (func() error, *lab.Program, Launch, error) {
	l, err := p.Plan(st)
	if err != nil {
		return nil, nil, l, err
	}
	prog, err := build(p.env, st, code)
	if err != nil {
		return nil, nil, l, err
	}
	k, err := prog.Kernel(st.Kernel)
	if err != nil {
		return nil, prog, l, err
	}
	s := p.Shape
	args := append([]any{p.Wd, p.Kd, p.Out, float32(p.Eps), int32(s.B), int32(s.C), int32(s.T)}, l.Extra...)
	return func() error { return k.Launch(l.Config, args...) }, prog, l, nil
}

// build compiles and loads a step's source (code, when not empty, replaces it); the env keeps
// built programs, so a step is loaded once per env however often it runs.
func build(env *lab.Env, st Step, code string) (*lab.Program, error) {
	src, err := st.Source(code)
	if err != nil {
		return nil, err
	}
	return env.BuildWith(src, compile.Options{Defines: st.Defines}, st.Kernel)
}

// Check runs a step once on a NaN-poisoned output and compares the checked rows with the float64
// reference under the step's tolerance.
func (p *Problem) Check(st Step, code string) (check.Result, error) {
	run, _, _, err := p.Launcher(st, code)
	if err != nil {
		return check.Result{}, err
	}
	return p.checkRun(run, st.Tol)
}

func (p *Problem) checkRun(run func() error, tol check.Tolerance) (check.Result, error) {
	if err := p.Out.Poison(); err != nil {
		return check.Result{}, err
	}
	if err := run(); err != nil {
		return check.Result{}, err
	}
	got, err := p.Out.ToHost()
	if err != nil {
		return check.Result{}, err
	}
	return check.Compare(Gather(got, p.Shape.T, p.Rows), p.want, tol), nil
}

// Measure checks a step, then times it, and returns its record (Case "forward").
func (p *Problem) Measure(st Step, code string) (record.Record, error) {
	rec := record.Record{Case: "forward", Variant: st.Name, Kind: "kernel", DType: st.DType, Shape: p.Shape.String(),
		Size: int64(p.Shape.T), Tol: st.Tol.Name, Note: st.Idea + "; checked: " + p.Checked()}
	run, _, _, err := p.Launcher(st, code)
	if err != nil {
		return rec, err
	}
	res, err := p.checkRun(run, st.Tol)
	if err != nil {
		return rec, err
	}
	rec.RelL2, rec.MaxAbs, rec.Correct = res.RelL2, res.MaxAbs, res.OK
	if !res.OK {
		return rec, fmt.Errorf("rwkv %s on %v: %w", st.Name, p.Shape, res.Err())
	}
	return p.env.Measure(rec, ForwardWork(p.Shape), run)
}

// Report is a step's compile report at its launch on p.
func (p *Problem) Report(st Step) (record.KernelReport, error) {
	_, prog, l, err := p.Launcher(st, "")
	if err != nil {
		return record.KernelReport{}, err
	}
	return prog.Report(st.Kernel, l.Config.Block.Count(), l.Config.SharedBytes), nil
}

// CompileReport compiles a step for the env's architecture without running it (the no-GPU mode's
// report: static shared memory only) at the launch it would have on shape s.
func CompileReport(env *lab.Env, st Step, s Shape) (record.KernelReport, error) {
	return compileReport(env, st, s, "")
}

// compileReport is CompileReport of code in place of the step's source (the file when empty).
func compileReport(env *lab.Env, st Step, s Shape, code string) (record.KernelReport, error) {
	src, err := st.Source(code)
	if err != nil {
		return record.KernelReport{}, err
	}
	prog, err := env.BuildWith(src, compile.Options{Defines: st.Defines}, st.Kernel)
	if err != nil {
		return record.KernelReport{}, err
	}
	var d gpu.DeviceInfo
	if env.Session != nil {
		d = env.Session.Device
	} else {
		d = env.Receipt.Device
	}
	l, err := st.Plan(s, d)
	if err != nil {
		return record.KernelReport{}, err
	}
	return prog.Report(st.Kernel, l.Config.Block.Count(), l.Config.SharedBytes), nil
}

package rwkv

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	kr "github.com/cudalessons/cudalessons/kernels/rwkv"
)

// BB is the number of batch rows of one channel a block of the batch-grouped backward (bwd v3)
// takes: the article's 2.
const BB = 2

// BwdTileRows is the batch rows per block of the register-tile backward (bwd v4), one per lane of
// a half-warp; its outputs per lane are 32 and T is padded to a multiple of BwdTilePad.
const (
	BwdTileRows = 16
	BwdTilePad  = 128
	bwdTileWPad = 32
)

// ReduceKernel sums the per-row (or per-group) partial dw slices over b, in order. Every backward
// file defines it.
const ReduceKernel = "rwkv_bwd_reduce"

// reduceBlock is the reduce kernel's block size.
const reduceBlock = 256

// DKTolerance is the tolerance of dk: sums of at most T <= 1024 float32 products.
var DKTolerance = check.FP32

// DWTolerance is the tolerance of dw, which sums B*T products per element (24576 at the article's
// shape) instead of at most T: float32 rounding grows about as 6e-8*sqrt(n) relative for such sums
// (about 1e-5 at n = 24576) and at worst as 6e-8*n. It is a bound derived from the term count, not
// widened to let a kernel pass.
var DWTolerance = check.Tolerance{Name: "fp32-long-sum", RelL2: 5e-5, Rel: 5e-4, Abs: 1e-5,
	Why: "float32 sums of B*T products (24576 at the article's shape): about 6e-8*sqrt(n) relative, 1.5e-3 worst case"}

// BackwardPlan is how a backward step runs on a shape: its main launches (one per kernel of the
// step, in order) and the number of partial dw slices (of C*T) they write. With more than one
// partial, the partials go to a scratch buffer and ReduceKernel sums them into dw; with one, the
// main kernels write dw directly.
type BackwardPlan struct {
	Main     []Launch
	Partials int
}

// BackwardStep is one rung of the backward ladder. Every main kernel takes
// (w, k, g, dk, dwpart, B, C, T) followed by its Launch's Extra arguments.
type BackwardStep struct {
	Name    string   // "bwd v0 naive"
	File    string   // in kernels/rwkv
	Kernels []string // the main kernels, launched in order
	Idea    string
	// Plan returns the launches for shape s on device d, or why the step cannot take s.
	Plan func(s Shape, d gpu.DeviceInfo) (BackwardPlan, error)
	code string // a reader's replacement of the file (WithCode)
}

// WithCode is the step with code in place of its file (a reader's edited kernels, with the same
// names and parameters, the reduce kernel included); empty code is the step itself.
func (st BackwardStep) WithCode(code string) BackwardStep {
	st.code = code
	return st
}

// BwdTileLayout is the register-tile backward's padded length Tp and the dynamic shared memory of
// its dk and dw kernels, in bytes.
func BwdTileLayout(T int) (tp, dkBytes, dwBytes int) {
	tp = gpu.CeilDiv(T, BwdTilePad) * BwdTilePad
	warps := tp / BwdTilePad
	dkBytes = 4 * (bwdTileWPad + tp + BwdTileRows*(tp+1) + warps*32*33)
	dwBytes = 4 * (BwdTileRows*(tp+1) + BwdTileRows*(bwdTileWPad+tp+1))
	return tp, dkBytes, dwBytes
}

// BackwardSteps are the backward ladder, in order.
var BackwardSteps = []BackwardStep{
	{Name: "bwd v0 naive", File: "bwd_0_naive.cu", Kernels: []string{"rwkv_bwd_v0"},
		Idea: "one thread per t computes dk[t] and the row's dw[t] from global memory; dw summed over b after",
		Plan: func(s Shape, d gpu.DeviceInfo) (BackwardPlan, error) {
			if err := needT("bwd v0 naive", s, TMax, 1); err != nil {
				return BackwardPlan{}, err
			}
			return BackwardPlan{Main: []Launch{{Config: gpu.Config{Grid: rowsGrid(s), Block: gpu.D1(s.T)}}}, Partials: s.B}, nil
		}},
	{Name: "bwd v1 shared", File: "bwd_1_shared.cu", Kernels: []string{"rwkv_bwd_v1"},
		Idea: "w, k and g rows staged in shared memory",
		Plan: func(s Shape, d gpu.DeviceInfo) (BackwardPlan, error) {
			if err := needT("bwd v1 shared", s, TMax, 1); err != nil {
				return BackwardPlan{}, err
			}
			return BackwardPlan{Main: []Launch{{Config: gpu.Config{Grid: rowsGrid(s), Block: gpu.D1(s.T)}}}, Partials: s.B}, nil
		}},
	{Name: "bwd v2 float4", File: "bwd_2_float4.cu", Kernels: []string{"rwkv_bwd_v2"},
		Idea: "4 outputs per thread: each shared value feeds 4 products; float4 loads and stores",
		Plan: func(s Shape, d gpu.DeviceInfo) (BackwardPlan, error) {
			if err := needT("bwd v2 float4", s, TMax, 4); err != nil {
				return BackwardPlan{}, err
			}
			return BackwardPlan{Main: []Launch{{Config: gpu.Config{Grid: rowsGrid(s), Block: gpu.D1(s.T / 4)}}}, Partials: s.B}, nil
		}},
	{Name: "bwd v3 batch group", File: "bwd_3_batch_group.cu", Kernels: []string{"rwkv_bwd_v3"},
		Idea: fmt.Sprintf("%d batch rows of one channel per block: w reused for dk, dw summed per group", BB),
		Plan: func(s Shape, d gpu.DeviceInfo) (BackwardPlan, error) {
			if err := needT("bwd v3 batch group", s, TMax, 4); err != nil {
				return BackwardPlan{}, err
			}
			if err := needB("bwd v3 batch group", s, BB); err != nil {
				return BackwardPlan{}, err
			}
			return BackwardPlan{Main: []Launch{{Config: gpu.Config{Grid: gpu.D1(s.B / BB * s.C), Block: gpu.D1(s.T / 4)}}}, Partials: s.B / BB}, nil
		}},
	{Name: "bwd v4 register tile", File: "bwd_4_register_tile.cu", Kernels: []string{"rwkv_bwd_v4_dk", "rwkv_bwd_v4_dw"},
		Idea: "32 outputs per lane in registers with a sliding register window; mirrored tile pairs balance the triangle",
		Plan: func(s Shape, d gpu.DeviceInfo) (BackwardPlan, error) {
			if err := needT("bwd v4 register tile", s, TMax, 1); err != nil {
				return BackwardPlan{}, err
			}
			tp, dkBytes, dwBytes := BwdTileLayout(s.T)
			if err := needShared("bwd v4 register tile", s, d, max(dkBytes, dwBytes)); err != nil {
				return BackwardPlan{}, err
			}
			groups := gpu.CeilDiv(s.B, BwdTileRows)
			if groups > 65535 {
				return BackwardPlan{}, fmt.Errorf("rwkv bwd v4 register tile: B = %d needs %d row blocks, over the grid's y limit of 65535", s.B, groups)
			}
			grid := gpu.D2(s.C, groups)
			block := gpu.D1(tp / 4)
			extra := []any{int32(tp)}
			return BackwardPlan{Main: []Launch{
				{Config: gpu.Config{Grid: grid, Block: block, SharedBytes: dkBytes}, Extra: extra},
				{Config: gpu.Config{Grid: grid, Block: block, SharedBytes: dwBytes}, Extra: extra},
			}, Partials: groups}, nil
		}},
}

// BackwardStepByName finds a backward step by its name or its version prefix ("bwd v4").
func BackwardStepByName(name string) (BackwardStep, error) {
	for _, s := range BackwardSteps {
		if s.Name == name || (len(s.Name) > len(name) && s.Name[:len(name)] == name && s.Name[len(name)] == ' ') {
			return s, nil
		}
	}
	return BackwardStep{}, fmt.Errorf("rwkv: no backward step %q", name)
}

// FastestBackward is the last (fastest) step of the backward ladder.
func FastestBackward() BackwardStep { return BackwardSteps[len(BackwardSteps)-1] }

// Source is the step's CUDA source (the reader's code after WithCode).
func (st BackwardStep) Source() (compile.Source, error) {
	if st.code != "" {
		return compile.Source{Name: "my_" + st.File, Code: st.code}, nil
	}
	return kr.Source(st.File)
}

// Validate checks the shape against the step's limits without launching.
func (st BackwardStep) Validate(s Shape, d gpu.DeviceInfo) error {
	if err := s.Validate(); err != nil {
		return err
	}
	_, err := st.Plan(s, d)
	return err
}

// Build compiles the step with its kernels and the reduce kernel loaded (compiled only, in the
// no-GPU mode).
func (st BackwardStep) Build(env *lab.Env) (*lab.Program, error) {
	src, err := st.Source()
	if err != nil {
		return nil, err
	}
	return env.Build(src, append(append([]string(nil), st.Kernels...), ReduceKernel)...)
}

// Backward is a compiled backward step bound to a shape: Run queues dk and dw for device buffers.
type Backward struct {
	Step    BackwardStep
	Shape   Shape
	Plan    BackwardPlan
	Program *lab.Program
	env     *lab.Env
	main    []*gpu.Kernel
	reduce  *gpu.Kernel
	scratch *gpu.Buffer[float32] // Partials*C*T when Partials > 1
}

// NewBackward validates the step on shape s (before anything is launched), compiles it and, when
// the step writes several partial dw slices, allocates their scratch buffer.
func NewBackward(env *lab.Env, st BackwardStep, s Shape) (*Backward, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("rwkv %s: running kernels needs a GPU (%s)", st.Name, env.Mode)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	plan, err := st.Plan(s, env.Session.Device)
	if err != nil {
		return nil, err
	}
	if len(plan.Main) != len(st.Kernels) {
		return nil, fmt.Errorf("rwkv %s: the plan has %d launches for %d kernels", st.Name, len(plan.Main), len(st.Kernels))
	}
	if plan.Partials > 1 && int64(plan.Partials)*int64(s.C)*int64(s.T) > MaxElems {
		return nil, fmt.Errorf("rwkv %s on %v: %d partial dw slices of C*T exceed the 32-bit index limit", st.Name, s, plan.Partials)
	}
	prog, err := st.Build(env)
	if err != nil {
		return nil, err
	}
	b := &Backward{Step: st, Shape: s, Plan: plan, Program: prog, env: env}
	for _, name := range st.Kernels {
		k, err := prog.Kernel(name)
		if err != nil {
			return nil, err
		}
		b.main = append(b.main, k)
	}
	if b.reduce, err = prog.Kernel(ReduceKernel); err != nil {
		return nil, err
	}
	if plan.Partials > 1 {
		if b.scratch, err = gpu.Alloc[float32](env.Session, plan.Partials*s.C*s.T); err != nil {
			return nil, fmt.Errorf("rwkv %s on %v: allocating %d partial dw slices: %w", st.Name, s, plan.Partials, err)
		}
	}
	return b, nil
}

// Free releases the scratch buffer.
func (b *Backward) Free() {
	if b != nil {
		b.scratch.Free()
	}
}

// Run queues the backward: dk (B, C, T) and dw (C, T) from w (C, T), k and g = dL/dout (B, C, T).
// Every element of dk and dw is written. Lengths are checked before any launch.
func (b *Backward) Run(w, k, g, dk, dw *gpu.Buffer[float32]) error {
	s := b.Shape
	for _, c := range []struct {
		name string
		buf  *gpu.Buffer[float32]
		n    int
	}{{"w", w, s.C * s.T}, {"k", k, s.Len()}, {"g", g, s.Len()}, {"dk", dk, s.Len()}, {"dw", dw, s.C * s.T}} {
		if c.buf == nil || c.buf.Len() != c.n {
			got := 0
			if c.buf != nil {
				got = c.buf.Len()
			}
			return fmt.Errorf("rwkv %s on %v: %s has %d elements, want %d", b.Step.Name, s, c.name, got, c.n)
		}
	}
	part := dw
	if b.Plan.Partials > 1 {
		part = b.scratch
	}
	for i, l := range b.Plan.Main {
		args := append([]any{w, k, g, dk, part, int32(s.B), int32(s.C), int32(s.T)}, l.Extra...)
		if err := b.main[i].Launch(l.Config, args...); err != nil {
			return fmt.Errorf("rwkv %s on %v: %w", b.Step.Name, s, err)
		}
	}
	if b.Plan.Partials > 1 {
		n := s.C * s.T
		cfg := gpu.Config{Grid: gpu.D1(gpu.CeilDiv(n, reduceBlock)), Block: gpu.D1(reduceBlock)}
		if err := b.reduce.Launch(cfg, b.scratch, dw, int32(b.Plan.Partials), int32(n)); err != nil {
			return fmt.Errorf("rwkv %s on %v: %w", b.Step.Name, s, err)
		}
	}
	return nil
}

// Reports are the compile reports of the step's main kernels at their launches.
func (b *Backward) Reports() []record.KernelReport {
	var out []record.KernelReport
	for i, name := range b.Step.Kernels {
		l := b.Plan.Main[i]
		out = append(out, b.Program.Report(name, l.Config.Block.Count(), l.Config.SharedBytes))
	}
	return out
}

// BackwardCompileReports compiles a backward step for the env's architecture without running it
// and reports its main kernels at the launches they would have on shape s (in the no-GPU mode only
// the static shared memory is known).
func BackwardCompileReports(env *lab.Env, st BackwardStep, s Shape) ([]record.KernelReport, error) {
	prog, err := st.Build(env)
	if err != nil {
		return nil, err
	}
	var d gpu.DeviceInfo
	if env.Session != nil {
		d = env.Session.Device
	} else {
		d = env.Receipt.Device
	}
	plan, err := st.Plan(s, d)
	if err != nil {
		return nil, err
	}
	var out []record.KernelReport
	for i, name := range st.Kernels {
		l := plan.Main[i]
		out = append(out, prog.Report(name, l.Config.Block.Count(), l.Config.SharedBytes))
	}
	return out, nil
}

// BackwardProblem is one backward problem on the GPU: w, k and an upstream gradient g uploaded,
// dk and dw allocated, and the float64 references of the checked dk rows and dw channels.
type BackwardProblem struct {
	Shape   Shape
	W, K, G []float32
	// Rows are the (b*C + c) rows of dk and Channels the channels of dw that are compared with the
	// reference; Sampled says they are not all.
	Rows, Channels []int
	Sampled        bool
	Wd, Kd, Gd     *gpu.Buffer[float32]
	DK, DW         *gpu.Buffer[float32]
	wantDK, wantDW []float64
	env            *lab.Env
}

// NewBackwardProblem draws w, k and g of shape s from seed, uploads them and computes the float64
// references of dk on checkRows random rows and of dw on a matching number of random channels
// (everything when checkRows <= 0 or >= B*C).
func NewBackwardProblem(env *lab.Env, s Shape, seed uint64, checkRows int) (*BackwardProblem, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if !env.GPU() {
		return nil, fmt.Errorf("rwkv: running kernels needs a GPU (%s)", env.Mode)
	}
	p := &BackwardProblem{Shape: s, env: env}
	p.W, p.K = Inputs(s, seed)
	p.G = Upstream(s, seed)
	if checkRows > 0 && checkRows < s.Rows() {
		p.Sampled = true
		p.Rows = SampleRows(s, checkRows, seed)
		p.Channels = SampleChannels(s, max(2, checkRows/max(1, s.B)), seed+1)
	} else {
		p.Rows = AllRows(s)
		p.Channels = SampleChannels(s, s.C, seed)
	}
	p.wantDK = BackwardDKRows(s, p.W, p.G, p.Rows)
	p.wantDW = BackwardDWChannels(s, p.K, p.G, p.Channels)
	var err error
	up := func(name string, x []float32) *gpu.Buffer[float32] {
		if err != nil {
			return nil
		}
		var b *gpu.Buffer[float32]
		if b, err = gpu.Upload(env.Session, x); err != nil {
			err = fmt.Errorf("rwkv %v: uploading %s: %w", s, name, err)
		}
		return b
	}
	p.Wd, p.Kd, p.Gd = up("w", p.W), up("k", p.K), up("g", p.G)
	if err == nil {
		if p.DK, err = gpu.Alloc[float32](env.Session, s.Len()); err == nil {
			p.DW, err = gpu.Alloc[float32](env.Session, s.C*s.T)
		}
	}
	if err != nil {
		p.Free()
		return nil, err
	}
	return p, nil
}

// Free releases the problem's device buffers.
func (p *BackwardProblem) Free() {
	if p == nil {
		return
	}
	for _, b := range []*gpu.Buffer[float32]{p.Wd, p.Kd, p.Gd, p.DK, p.DW} {
		b.Free()
	}
}

// Checked says what the check covers, for notes and tables.
func (p *BackwardProblem) Checked() string {
	if p.Sampled {
		return fmt.Sprintf("dk on %d random (b,c) rows of %d, dw on %d random channels of %d", len(p.Rows), p.Shape.Rows(), len(p.Channels), p.Shape.C)
	}
	return "every element of dk and dw"
}

// Launcher compiles the step for p's shape (refusing a shape it cannot take before any launch) and
// returns a function that queues one backward on p. Free the returned Backward when done.
func (p *BackwardProblem) Launcher(st BackwardStep) (func() error, *Backward, error) {
	b, err := NewBackward(p.env, st, p.Shape)
	if err != nil {
		return nil, nil, err
	}
	return func() error { return b.Run(p.Wd, p.Kd, p.Gd, p.DK, p.DW) }, b, nil
}

// BackwardCheck is the comparison of one backward step's dk and dw with the float64 reference.
type BackwardCheck struct {
	DK, DW check.Result
}

// OK says both passed.
func (c BackwardCheck) OK() bool { return c.DK.OK && c.DW.OK }

// Err is nil when both passed and otherwise says which failed.
func (c BackwardCheck) Err() error {
	switch {
	case !c.DK.OK:
		return fmt.Errorf("dk: %w", c.DK.Err())
	case !c.DW.OK:
		return fmt.Errorf("dw: %w", c.DW.Err())
	}
	return nil
}

// String is one line per gradient.
func (c BackwardCheck) String() string { return "dk " + c.DK.String() + "\ndw " + c.DW.String() }

// Check runs a backward step once on NaN-poisoned dk and dw (and scratch) and compares the checked
// rows and channels with the float64 reference.
func (p *BackwardProblem) Check(st BackwardStep) (BackwardCheck, error) {
	run, b, err := p.Launcher(st)
	if err != nil {
		return BackwardCheck{}, err
	}
	defer b.Free()
	return p.checkRun(run, b)
}

func (p *BackwardProblem) checkRun(run func() error, b *Backward) (BackwardCheck, error) {
	for _, buf := range []*gpu.Buffer[float32]{p.DK, p.DW, b.scratch} {
		if buf == nil {
			continue
		}
		if err := buf.Poison(); err != nil {
			return BackwardCheck{}, err
		}
	}
	if err := run(); err != nil {
		return BackwardCheck{}, err
	}
	dk, err := p.DK.ToHost()
	if err != nil {
		return BackwardCheck{}, fmt.Errorf("rwkv %s: %w", b.Step.Name, err)
	}
	dw, err := p.DW.ToHost()
	if err != nil {
		return BackwardCheck{}, fmt.Errorf("rwkv %s: %w", b.Step.Name, err)
	}
	s := p.Shape
	return BackwardCheck{
		DK: check.Compare(Gather(dk, s.T, p.Rows), p.wantDK, DKTolerance),
		DW: check.Compare(Gather(dw, s.T, p.Channels), p.wantDW, DWTolerance),
	}, nil
}

// Measure checks a backward step, then times dk and dw together (every launch of the step,
// the reduce included), and returns its record (Case "backward").
func (p *BackwardProblem) Measure(st BackwardStep) (record.Record, error) {
	rec := record.Record{Case: "backward", Variant: st.Name, Kind: "kernel", DType: "float32", Shape: p.Shape.String(),
		Size: int64(p.Shape.T), Tol: DKTolerance.Name + " (dk), " + DWTolerance.Name + " (dw)", Note: st.Idea + "; checked: " + p.Checked()}
	run, b, err := p.Launcher(st)
	if err != nil {
		return rec, err
	}
	defer b.Free()
	res, err := p.checkRun(run, b)
	if err != nil {
		return rec, err
	}
	rec.RelL2 = math.Max(res.DK.RelL2, res.DW.RelL2)
	rec.MaxAbs = math.Max(res.DK.MaxAbs, res.DW.MaxAbs)
	rec.Note += fmt.Sprintf("; dk rel L2 %.2e (max abs %.2e), dw rel L2 %.2e (max abs %.2e)", res.DK.RelL2, res.DK.MaxAbs, res.DW.RelL2, res.DW.MaxAbs)
	rec.Correct = res.OK()
	if !res.OK() {
		return rec, fmt.Errorf("rwkv %s on %v: %w", st.Name, p.Shape, res.Err())
	}
	return p.env.Measure(rec, BackwardWork(p.Shape), run)
}

// Reports are the compile reports of a backward step's main kernels at their launches on p.
func (p *BackwardProblem) Reports(st BackwardStep) ([]record.KernelReport, error) {
	_, b, err := p.Launcher(st)
	if err != nil {
		return nil, err
	}
	defer b.Free()
	return b.Reports(), nil
}

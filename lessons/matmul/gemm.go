package matmul

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// Problem is one product on the GPU: inputs drawn from a seed and uploaded, the output allocated,
// the elements to check and their float64 reference.
type Problem struct {
	Shape  Shape
	A, B   []float32
	Sample Sample
	Ad, Bd *gpu.Buffer[float32]
	Cd     *gpu.Buffer[float32]
	halves [4]*gpu.Buffer[uint16]  // Ahi, Alo, Bhi, Blo of the split steps, allocated on first use
	work   [4]*gpu.Buffer[float32] // the any-shape step's padded A, B, C and split-K slices (scratch)
	// padAlways makes the any-shape step pad unaligned rows at any size (the tests' small shapes).
	padAlways bool
	want      []float64
	env       *lab.Env
}

// DeviceBytes is the device memory a product of shape s needs: A, B and C in float32, plus the
// 16-bit hi and lo copies of A and B when split is true.
func DeviceBytes(s Shape, split bool) int64 {
	b := 4 * (int64(s.M)*int64(s.K) + int64(s.K)*int64(s.N) + int64(s.M)*int64(s.N))
	if split {
		b += 2 * 2 * (int64(s.M)*int64(s.K) + int64(s.K)*int64(s.N))
	}
	return b
}

// CheckMemory refuses a product that does not fit in the device's free memory, before allocating.
func CheckMemory(env *lab.Env, s Shape, split bool) error {
	if !env.GPU() {
		return nil
	}
	free, total, err := env.Session.MemInfo()
	if err != nil {
		return err
	}
	return checkFits(s, split, free, total, env.Receipt.Device.Name)
}

// NewProblem draws the inputs of shape s from seed, uploads them, and computes the reference on
// the sample (every element of a small product; rows full rows, cols full columns and n random
// elements of a large one).
func NewProblem(env *lab.Env, s Shape, seed uint64, rows, cols, n int) (*Problem, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if !env.GPU() {
		return nil, fmt.Errorf("matmul: running kernels needs a GPU (%s)", env.Mode)
	}
	if err := CheckMemory(env, s, false); err != nil {
		return nil, err
	}
	a, b := Inputs(s, seed)
	return newProblemFrom(env, s, a, b, SampleOf(s, rows, cols, n, seed))
}

// UploadProblem uploads a caller's inputs of shape s as a problem with no sample and no reference
// (what Multiply does with a reader's matrices), with C allocated and NaN-poisoned. The caller frees
// it.
func UploadProblem(env *lab.Env, s Shape, a, b []float32) (*Problem, error) {
	if len(a) != s.M*s.K || len(b) != s.K*s.N {
		return nil, fmt.Errorf("matmul: A has %d values for %d x %d and B %d for %d x %d", len(a), s.M, s.K, len(b), s.K, s.N)
	}
	p, err := newProblemFrom(env, s, a, b, Sample{})
	if err != nil {
		return nil, err
	}
	if err := p.Cd.Poison(); err != nil { // an output the step leaves unwritten comes back NaN
		p.Free()
		return nil, err
	}
	return p, nil
}

// FP16Safe reports whether every value of x is finite and below fp16's largest in magnitude, as the
// fp16 split needs.
func FP16Safe(x []float32) bool { return fp16Safe(x) }

// newProblemFrom uploads given inputs and computes the reference on the sample.
func newProblemFrom(env *lab.Env, s Shape, a, b []float32, sample Sample) (*Problem, error) {
	p := &Problem{Shape: s, A: a, B: b, Sample: sample, env: env}
	p.want = Reference(s, p.A, p.B, p.Sample.Idx)
	var err error
	if p.Ad, err = gpu.Upload(env.Session, p.A); err != nil {
		return nil, fmt.Errorf("matmul %v: uploading A: %w", s, err)
	}
	if p.Bd, err = gpu.Upload(env.Session, p.B); err != nil {
		p.Free()
		return nil, fmt.Errorf("matmul %v: uploading B: %w", s, err)
	}
	if p.Cd, err = gpu.Alloc[float32](env.Session, s.M*s.N); err != nil {
		p.Free()
		return nil, fmt.Errorf("matmul %v: allocating C: %w", s, err)
	}
	return p, nil
}

// NewCheckedProblem is NewProblem with the lesson's default sample: 4 rows, 4 columns and 512
// random elements of a large product.
func NewCheckedProblem(env *lab.Env, s Shape, seed uint64) (*Problem, error) {
	return NewProblem(env, s, seed, 4, 4, 512)
}

// Free releases the problem's device buffers.
func (p *Problem) Free() {
	for _, b := range []*gpu.Buffer[float32]{p.Ad, p.Bd, p.Cd} {
		b.Free()
	}
	for _, b := range p.halves {
		b.Free()
	}
	for _, b := range p.work {
		b.Free()
	}
}

// Want is the float64 reference at the sampled elements.
func (p *Problem) Want() []float64 { return p.want }

func (p *Problem) splitBuffers() error {
	if p.halves[0] != nil {
		return nil
	}
	need := DeviceBytes(p.Shape, true) - DeviceBytes(p.Shape, false)
	if free, _, err := p.env.Session.MemInfo(); err == nil && need > free {
		return fmt.Errorf("matmul %v: the split needs %s more for the 16-bit halves of A and B, over the %s free", p.Shape, gpu.FormatBytes(need), gpu.FormatBytes(free))
	}
	sizes := []int{p.Shape.M * p.Shape.K, p.Shape.M * p.Shape.K, p.Shape.K * p.Shape.N, p.Shape.K * p.Shape.N}
	for i, n := range sizes {
		b, err := gpu.Alloc[uint16](p.env.Session, n)
		if err != nil {
			return fmt.Errorf("matmul %v: allocating the split halves: %w", p.Shape, err)
		}
		p.halves[i] = b
	}
	return nil
}

// build compiles and loads a step (or a reader's code in its place) with its options.
func build(env *lab.Env, st Step, code string) (*lab.Program, error) {
	src, err := st.Source(code)
	if err != nil {
		return nil, err
	}
	kernels := []string{st.Kernel}
	if st.Split {
		kernels = append(kernels, "mm_split_halves")
	}
	if st.SplitK {
		kernels = append(kernels, "mm_copy_rows", "mm_sum_slices")
	}
	return env.BuildWith(src, st.OptionsOn(env.Arch(), env.Device()), kernels...)
}

// SplitBlock and SplitWaves shape the grid-stride launch of mm_split_halves.
const (
	SplitBlock = 256
	SplitWaves = 4
)

// Launcher plans the step on the problem's shape (refusing it before any launch when the step
// cannot take it), compiles its build for the shape (Step.For: the any-shape step's tile), and
// returns a function that queues it: for the split steps, the split of A and of B, then the product.
func (p *Problem) Launcher(st Step, code string) (func() error, *lab.Program, gpu.Config, error) {
	d := p.env.Session.Device
	st = st.For(p.Shape, d)
	if err := st.Validate(p.Shape, d); err != nil {
		return nil, nil, gpu.Config{}, err
	}
	cfg, _ := st.Plan(p.Shape, d)
	if !gpu.Aligned(16, p.Ad, p.Bd, p.Cd) {
		return nil, nil, cfg, fmt.Errorf("matmul %s: the buffers are not 16-byte aligned, which its vector loads need", st.Name)
	}
	prog, err := build(p.env, st, code)
	if err != nil {
		return nil, nil, cfg, err
	}
	k, err := prog.Kernel(st.Kernel)
	if err != nil {
		return nil, prog, cfg, err
	}
	s := p.Shape
	dims := []any{int32(s.M), int32(s.N), int32(s.K)}
	if st.SplitK {
		run, err := p.splitKLauncher(st, prog, k, cfg)
		return run, prog, cfg, err
	}
	if !st.Split {
		args := append([]any{p.Ad, p.Bd, p.Cd}, dims...)
		return func() error { return k.Launch(cfg, args...) }, prog, cfg, nil
	}
	sk, err := prog.Kernel("mm_split_halves")
	if err != nil {
		return nil, prog, cfg, err
	}
	if err := p.splitBuffers(); err != nil {
		return nil, prog, cfg, err
	}
	h := p.halves
	na, nb := s.M*s.K, s.K*s.N
	ca := gpu.Config{Grid: gpu.D1(gpu.WavesGrid(d, na, SplitBlock, SplitWaves)), Block: gpu.D1(SplitBlock)}
	cb := gpu.Config{Grid: gpu.D1(gpu.WavesGrid(d, nb, SplitBlock, SplitWaves)), Block: gpu.D1(SplitBlock)}
	args := append([]any{h[0], h[1], h[2], h[3], p.Cd}, dims...)
	return func() error {
		if err := sk.Launch(ca, p.Ad, h[0], h[1], int64(na)); err != nil {
			return err
		}
		if err := sk.Launch(cb, p.Bd, h[2], h[3], int64(nb)); err != nil {
			return err
		}
		return k.Launch(cfg, args...)
	}, prog, cfg, nil
}

// splitKLauncher queues the any-shape step st (a build of one tile). A large product whose rows of
// A or B are not 16-byte aligned (K or N not a multiple of 4; at least PadMinMACs multiply-adds) is
// first padded: A and B are copied into zero-padded buffers with aligned rows (mm_copy_rows), the
// aligned product runs into a padded C, which is copied back; st plans the padded shape again (same
// tile, slices for the padded K). The product runs over the plan's cfg.Grid.Z slices of K in one
// launch: straight into C when there is one, else each slice into a workspace of that many partial
// products that mm_sum_slices adds up into C in slice order, or, in a build with CLUSTER_K, the
// slices are the blocks of a cluster that add them up in shared memory.
func (p *Problem) splitKLauncher(st Step, prog *lab.Program, k *gpu.Kernel, cfg gpu.Config) (func() error, error) {
	s, d := p.Shape, p.env.Session.Device
	a, b, c := p.Ad, p.Bd, p.Cd
	var before, after []func() error
	if Padded(s) || p.padAlways && (s.K%4 != 0 || s.N%4 != 0) {
		ps := Shape{M: s.M, N: roundUp4(s.N), K: roundUp4(s.K)}
		copyRows, err := prog.Kernel("mm_copy_rows")
		if err != nil {
			return nil, err
		}
		copyTo := func(src, dst *gpu.Buffer[float32], rows, cols, ld, dstCols int) func() error {
			g := gpu.Config{Grid: gpu.D1(gpu.WavesGrid(d, rows*dstCols, SplitBlock, SplitWaves)), Block: gpu.D1(SplitBlock)}
			return func() error {
				return copyRows.Launch(g, src, dst, int32(rows), int32(cols), int32(ld), int32(dstCols))
			}
		}
		if ps.K != s.K {
			if a, err = p.scratch(paddedA, s.M*ps.K); err != nil {
				return nil, err
			}
			before = append(before, copyTo(p.Ad, a, s.M, s.K, s.K, ps.K))
		}
		if b, err = p.scratch(paddedB, ps.K*ps.N); err != nil {
			return nil, err
		}
		before = append(before, copyTo(p.Bd, b, s.K, s.N, s.N, ps.N))
		if ps.K != s.K { // B's rows past K are zeros: the padded A's extra columns meet them
			if err := b.Zero(); err != nil {
				return nil, err
			}
		}
		if ps.N != s.N {
			if c, err = p.scratch(paddedC, s.M*ps.N); err != nil {
				return nil, err
			}
			after = append(after, copyTo(c, p.Cd, s.M, s.N, ps.N, s.N))
		}
		if cfg, err = st.Plan(ps, d); err != nil {
			return nil, err
		}
		s = ps
	}
	n := cfg.Grid.Z
	args := []any{a, b, c, uintptr(0), int32(s.M), int32(s.N), int32(s.K), int32(gpu.CeilDiv(gpu.CeilDiv(s.K, AnyShapeBK), n))}
	steps := append([]func() error{}, before...)
	steps = append(steps, func() error { return k.Launch(cfg, args...) })
	if n > 1 && st.clusterK() == 1 {
		w, err := p.scratch(sliceSums, n*s.M*s.N)
		if err != nil {
			return nil, err
		}
		args[3] = w
		sum, err := prog.Kernel("mm_sum_slices")
		if err != nil {
			return nil, err
		}
		outputs := s.M * s.N
		g := gpu.Config{Grid: gpu.D1(gpu.WavesGrid(d, outputs, SplitBlock, SplitWaves)), Block: gpu.D1(SplitBlock)}
		steps = append(steps, func() error { return sum.Launch(g, w, c, int64(outputs), int32(n)) })
	}
	steps = append(steps, after...)
	return func() error {
		for _, f := range steps {
			if err := f(); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// PadMinMACs is the size (M x N x K multiply-adds) from which the any-shape step pads a product whose
// rows are not aligned: below it the copies cost more than the single-float loads they save (on the
// H100, padding 1000 x 3000 x 777, 2.3e9, took it from 161 to 172 µs; 4095^3, 6.9e10, went from
// 4.31 to 3.88 ms).
const PadMinMACs = 1 << 33

// Padded reports whether the any-shape step pads s (K or N not a multiple of 4, and at least
// PadMinMACs multiply-adds).
func Padded(s Shape) bool {
	return (s.K%4 != 0 || s.N%4 != 0) && int64(s.M)*int64(s.N)*int64(s.K) >= PadMinMACs
}

func roundUp4(n int) int { return (n + 3) / 4 * 4 }

// The any-shape step's work buffers (Problem.scratch).
const (
	paddedA = iota
	paddedB
	paddedC
	sliceSums
)

// scratch is the problem's work buffer i (paddedA, paddedB, paddedC or sliceSums) of n floats,
// allocated and NaN-poisoned on first use (again when n changes), with an error naming the need
// when the device has no room for it.
func (p *Problem) scratch(i, n int) (*gpu.Buffer[float32], error) {
	if b := p.work[i]; b != nil && b.Len() == n {
		return b, nil
	}
	p.work[i].Free()
	b, err := gpu.Alloc[float32](p.env.Session, n)
	if err != nil {
		p.work[i] = nil
		return nil, fmt.Errorf("matmul %v: %s of the any-shape step (%s): %w", p.Shape, scratchNames[i], gpu.FormatBytes(int64(4*n)), err)
	}
	p.work[i] = b
	if err := b.Poison(); err != nil { // what no kernel writes shows as NaN in C
		return nil, err
	}
	return b, nil
}

var scratchNames = [4]string{"the padded A", "the padded B", "the padded C", "the workspace of the split-K slices"}

// Output runs once on a NaN-poisoned C and returns the sampled elements of the result.
func (p *Problem) Output(run func() error) ([]float64, error) {
	if err := p.Cd.Poison(); err != nil {
		return nil, err
	}
	if err := run(); err != nil {
		return nil, err
	}
	if err := p.env.Session.Synchronize(); err != nil {
		return nil, err
	}
	c, err := p.Cd.ToHost()
	if err != nil {
		return nil, err
	}
	return Gather(c, p.Sample.Idx), nil
}

// Check runs a step once on a NaN-poisoned output and compares the sampled elements with the
// float64 reference at the step's tolerance. code, when not empty, replaces the step's source.
func (p *Problem) Check(st Step, code string) (check.Result, error) {
	run, _, _, err := p.Launcher(st, code)
	if err != nil {
		return check.Result{}, err
	}
	got, err := p.Output(run)
	if err != nil {
		return check.Result{}, fmt.Errorf("matmul %s on %v: %w", st.Name, p.Shape, err)
	}
	return check.Compare(got, p.want, st.Tol(p.Shape.K)), nil
}

// Record is the record of a step on this problem, before timing: its note says what it was checked
// on, its pipeline depth, and, for a step whose build depends on the shape, the build and its
// slices of K.
func (p *Problem) Record(caseName string, st Step) record.Record {
	note := "checked on " + p.Sample.What
	if depth := st.DepthNote(p.env.Device()); depth != "" {
		note += "; " + depth
	}
	if st.Shaped != nil {
		b := st.For(p.Shape, p.env.Device())
		note += "; built as " + b.Name
		if cfg, err := b.Plan(p.Shape, p.env.Device()); err == nil && cfg.Grid.Z > 1 {
			note += fmt.Sprintf(", K in %d slices", cfg.Grid.Z)
		}
	}
	return record.Record{Case: caseName, Variant: st.Name, Kind: "kernel", DType: st.DType, Shape: p.Shape.String(),
		Size: int64(p.Shape.M), Tol: st.Tol(p.Shape.K).Name, Note: note}
}

// Measure checks a step (a failed check is an error), then times it, and returns its record.
func (p *Problem) Measure(caseName string, st Step, code string) (record.Record, error) {
	rec := p.Record(caseName, st)
	res, err := p.Check(st, code)
	if err != nil {
		return rec, err
	}
	rec.RelL2, rec.MaxAbs, rec.Correct = res.RelL2, res.MaxAbs, res.OK
	if !res.OK {
		return rec, fmt.Errorf("matmul %s on %v: %w", st.Name, p.Shape, res.Err())
	}
	run, _, _, err := p.Launcher(st, code)
	if err != nil {
		return rec, err
	}
	return p.env.Measure(rec, p.Shape.Work(), run)
}

// Report is the compile report of a step at this problem's launch (of its build for the shape).
func (p *Problem) Report(st Step) (record.KernelReport, error) {
	_, prog, cfg, err := p.Launcher(st, "")
	if err != nil {
		return record.KernelReport{}, err
	}
	st = st.For(p.Shape, p.env.Device())
	r := prog.Report(st.Kernel, cfg.Block.Count(), cfg.SharedBytes)
	if defs := st.DefinesOn(p.env.Device()); len(defs) > 0 {
		r.Source += fmt.Sprintf(" %v", defs)
	}
	return r, nil
}

// CompileReport compiles a step (its build for the article's shape) without a GPU (or with one)
// and reports what is known at the article's shape: in the no-GPU mode only the static shared
// memory.
func CompileReport(env *lab.Env, st Step) (record.KernelReport, error) {
	st = st.For(Article, env.Device())
	prog, err := build(env, st, "")
	if err != nil {
		return record.KernelReport{}, err
	}
	cfg, err := st.Plan(Article, env.Device())
	if err != nil {
		return record.KernelReport{}, err
	}
	return prog.Report(st.Kernel, cfg.Block.Count(), cfg.SharedBytes), nil
}

// Multiply computes C = A·B for A (m x k) and B (k2 x n), row-major float32, on the GPU, with
// float32 accuracy over float32's whole range: it refuses mismatched inner dimensions, empty or
// oversized shapes and products over the free device memory before any launch, then runs the step
// Choose picks and returns it. Choose takes the fastest float32-accurate step for the shape (Pick):
// a tensor-core split (fp16x3, or 3xTF32) runs on copies of A and B whose rows and columns are
// moved by powers of two into the window where the split keeps 22 bits (SplitTop), and C is moved
// back; inputs with an Inf or NaN, or whose rows or columns span more binades than the split keeps
// (SplitSpanFP16, SplitSpanTF32), run a float32 step instead, as do shapes no split takes (the
// any-shape, thin-K or shared-memory step). Choose(...).Why says which and why.
func Multiply(env *lab.Env, a []float32, m, k int, b []float32, k2, n int) ([]float32, Step, error) {
	s, err := ShapeOf(m, k, k2, n)
	if err != nil {
		return nil, Step{}, err
	}
	if len(a) != m*k || len(b) != k2*n {
		return nil, Step{}, fmt.Errorf("matmul: A has %d values for %d x %d and B %d for %d x %d", len(a), m, k, len(b), k2, n)
	}
	if !env.GPU() {
		return nil, Step{}, fmt.Errorf("matmul: running kernels needs a GPU (%s)", env.Mode)
	}
	ch := Choose(s, env.Session.Device, a, b)
	st := ch.Step
	if err := CheckMemory(env, s, st.Split); err != nil {
		return nil, st, err
	}
	if ch.RowShift != nil {
		a, b = ScaleRows(a, m, k, ch.RowShift), ScaleCols(b, k, n, ch.ColShift)
	}
	p := &Problem{Shape: s, A: a, B: b, env: env}
	defer p.Free()
	if p.Ad, err = gpu.Upload(env.Session, a); err != nil {
		return nil, st, err
	}
	if p.Bd, err = gpu.Upload(env.Session, b); err != nil {
		return nil, st, err
	}
	if p.Cd, err = gpu.Alloc[float32](env.Session, m*n); err != nil {
		return nil, st, err
	}
	if err := p.Cd.Poison(); err != nil { // an output the step leaves unwritten comes back NaN
		return nil, st, err
	}
	run, _, _, err := p.Launcher(st, "")
	if err != nil {
		return nil, st, err
	}
	if err := run(); err != nil {
		return nil, st, err
	}
	c, err := p.Cd.ToHost()
	if err == nil && ch.RowShift != nil {
		Unscale(c, m, n, ch.RowShift, ch.ColShift)
	}
	return c, st, err
}

// FP16Max is the largest finite fp16 value; the fp16 split needs every input below it in magnitude.
const FP16Max = 65504

func fp16Safe(x []float32) bool {
	for _, v := range x {
		if math.Abs(float64(v)) >= FP16Max || v != v {
			return false
		}
	}
	return true
}

package reduce

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	kr "github.com/cudalessons/cudalessons/kernels/reduce"
)

// SoftmaxLaunch is how a softmax step runs on a shape: the kernel, its launch, its compile-time
// defines, the vec argument (-1: the kernel takes none), and why.
type SoftmaxLaunch struct {
	Kernel      string
	Grid, Block int
	Defines     []string
	Vec         int32
	Note        string
}

// SoftmaxStep is one rung of the softmax ladder.
type SoftmaxStep struct {
	Name   string // "1 naive", ...
	File   string
	Idea   string
	DTypes []DType
	// Plan picks the launch for rows x cols of dtype d, aligned says whether x and y are 16-byte
	// aligned; it refuses what the step cannot take, naming the limit, before any launch.
	Plan func(d DType, rows, cols int, aligned bool) (SoftmaxLaunch, error)
}

// NaiveMaxCols is the longest row of the naive step: one thread sums it in sequence, and past this
// length float32's rounding of that sum breaks the fp32 bound (1.8e-4 measured at 262144 columns).
const NaiveMaxCols = 65536

// ClusterVecs is the number of float4s each thread of the cluster step holds in registers.
const ClusterVecs = 8

// MaxCluster is the largest cluster the cluster step uses (the portable limit of the hardware).
const MaxCluster = 8

// WarpRowMaxCols is the longest row of the warp-per-row step (32 floats per lane).
const WarpRowMaxCols = 1024

// SoftmaxSteps are the softmax steps, in order.
var SoftmaxSteps = []SoftmaxStep{
	{Name: "1 naive", File: "s1_naive.cu", Idea: "a thread per row, three passes", DTypes: []DType{F32},
		Plan: func(d DType, rows, cols int, aligned bool) (SoftmaxLaunch, error) {
			if cols > NaiveMaxCols {
				return SoftmaxLaunch{}, fmt.Errorf("softmax step 1 adds a row in sequence in one thread: cols = %d is over its limit of %d (float32 rounding of a longer sequential sum passes the 1e-5 bound); step 2 adds in a tree", cols, NaiveMaxCols)
			}
			return SoftmaxLaunch{Kernel: "softmax_naive", Grid: gpu.CeilDiv(rows, 128), Block: 128, Vec: -1}, nil
		}},
	{Name: "2 block tree", File: "s2_block_tree.cu", Idea: "a block per row, shared-memory tree reductions", DTypes: []DType{F32},
		Plan: func(d DType, rows, cols int, aligned bool) (SoftmaxLaunch, error) {
			return SoftmaxLaunch{Kernel: "softmax_block_tree", Grid: rows, Block: 256, Vec: -1}, nil
		}},
	{Name: "3 warp shuffles + float4", File: "s3_warp_float4.cu", Idea: "shuffle reductions, 16-byte loads (the article's shape)", DTypes: []DType{F32},
		Plan: func(d DType, rows, cols int, aligned bool) (SoftmaxLaunch, error) {
			if cols%4 != 0 || !aligned {
				return SoftmaxLaunch{}, fmt.Errorf("softmax step 3 loads float4s: it needs cols %% 4 == 0 (cols = %d) and 16-byte aligned x and y (aligned: %v); step 4 takes any shape", cols, aligned)
			}
			return SoftmaxLaunch{Kernel: "softmax_warp_float4", Grid: rows, Block: 256, Vec: -1}, nil
		}},
	{Name: "4 online", File: "s4_online.cu", Idea: "one pass for max and sum, one to write", DTypes: []DType{F32},
		Plan: func(d DType, rows, cols int, aligned bool) (SoftmaxLaunch, error) {
			l := SoftmaxLaunch{Kernel: "softmax_online", Grid: rows, Block: 512}
			if cols%4 == 0 && aligned {
				l.Vec = 1
			} else {
				l.Note = "not float4-able (cols % 4 != 0 or misaligned): single floats"
			}
			return l, nil
		}},
	{Name: "5 cluster, read once", File: "s5_cluster.cu", Idea: "the row split across a thread block cluster, held in registers", DTypes: []DType{F32},
		Plan: func(d DType, rows, cols int, aligned bool) (SoftmaxLaunch, error) {
			return PlanCluster(rows, cols, aligned, ClusterVecs)
		}},
	{Name: "6 warp per row", File: "s6_warp_row.cu", Idea: "short rows: a warp per row, the row in registers", DTypes: []DType{F32},
		Plan: func(d DType, rows, cols int, aligned bool) (SoftmaxLaunch, error) {
			if cols > WarpRowMaxCols {
				return SoftmaxLaunch{}, fmt.Errorf("softmax step 6 keeps a row in one warp's registers: cols = %d is over its limit of %d", cols, WarpRowMaxCols)
			}
			l := SoftmaxLaunch{Kernel: "softmax_warp_row4", Grid: gpu.CeilDiv(rows, 8), Block: 256, Vec: -1}
			if cols%4 != 0 || !aligned {
				l.Kernel, l.Note = "softmax_warp_row1", "not float4-able: single floats"
			}
			return l, nil
		}},
	{Name: "7 half / bfloat16", File: "s7_half.cu", Idea: "16-bit rows, float arithmetic", DTypes: []DType{F16, BF16},
		Plan: func(d DType, rows, cols int, aligned bool) (SoftmaxLaunch, error) {
			l := SoftmaxLaunch{Kernel: "softmax_f16", Grid: rows, Block: 512}
			if d == BF16 {
				l.Kernel = "softmax_bf16"
			}
			if cols%8 == 0 && aligned {
				l.Vec = 1
			} else {
				l.Note = "not 16-byte-able (cols % 8 != 0 or misaligned): single elements"
			}
			return l, nil
		}},
}

// PlanCluster picks the cluster step's launch: the smallest cluster (1, 2, 4 or 8 blocks) whose
// blocks of at most 1024 threads, each thread holding vecs float4s, cover a row, and the fewest
// threads (a multiple of 32) that do.
func PlanCluster(rows, cols int, aligned bool, vecs int) (SoftmaxLaunch, error) {
	if cols%4 != 0 || !aligned {
		return SoftmaxLaunch{}, fmt.Errorf("softmax step 5 holds float4s: it needs cols %% 4 == 0 (cols = %d) and 16-byte aligned x and y (aligned: %v); step 4 takes any shape", cols, aligned)
	}
	maxThreads := 1024
	if vecs > 8 {
		maxThreads = 512 // more registers per thread: a 1024-thread block would not fit the SM's 64K registers
	}
	for c := 1; c <= MaxCluster; c *= 2 {
		if c*maxThreads*vecs*4 >= cols {
			threads := gpu.CeilDiv(gpu.CeilDiv(cols, c*vecs*4), 32) * 32
			return SoftmaxLaunch{Kernel: "softmax_cluster", Grid: rows * c, Block: threads, Vec: -1,
				Defines: []string{fmt.Sprintf("CLUSTER=%d", c), fmt.Sprintf("VECS=%d", vecs)},
				Note:    fmt.Sprintf("cluster of %d blocks of %d threads, %d floats per thread", c, threads, 4*vecs)}, nil
		}
	}
	return SoftmaxLaunch{}, fmt.Errorf("softmax step 5 holds a row on chip: cols = %d is over its limit of %d (%d blocks of %d threads x %d floats); step 4 takes any length",
		cols, MaxCluster*maxThreads*vecs*4, MaxCluster, maxThreads, 4*vecs)
}

// SoftmaxStepByName finds a step.
func SoftmaxStepByName(name string) (SoftmaxStep, error) {
	for _, s := range SoftmaxSteps {
		if s.Name == name {
			return s, nil
		}
	}
	return SoftmaxStep{}, fmt.Errorf("lesson 04: no softmax step %q", name)
}

// checkSoftmaxShape refuses shapes no step takes: empty rows (softmax of nothing is undefined),
// and sizes past the kernels' 32-bit arguments and the grid.
func checkSoftmaxShape(rows, cols int) error {
	switch {
	case rows < 1:
		return fmt.Errorf("softmax: rows = %d: there must be at least one row", rows)
	case cols < 1:
		return fmt.Errorf("softmax: cols = %d: a row of length zero has no softmax (its sum is 0)", cols)
	case cols > math.MaxInt32 || rows > math.MaxInt32/MaxCluster:
		return fmt.Errorf("softmax: (%d, %d) is over the kernels' limits (cols < 2^31, rows < 2^28)", rows, cols)
	}
	return nil
}

// Refusal is a shape a step does not take, found by its plan before any launch.
type Refusal struct{ Err error }

func (r *Refusal) Error() string { return r.Err.Error() }

// Unwrap is the plan's error.
func (r *Refusal) Unwrap() error { return r.Err }

// IsRefusal says whether err is a step's plan refusing a shape (not a failure of the run).
func IsRefusal(err error) bool {
	var r *Refusal
	return errors.As(err, &r)
}

// PlanSoftmax checks the shape, then asks step s for its launch. A shape it refuses is a *Refusal.
func PlanSoftmax(s SoftmaxStep, d DType, rows, cols int, aligned bool) (SoftmaxLaunch, error) {
	if err := checkSoftmaxShape(rows, cols); err != nil {
		return SoftmaxLaunch{}, &Refusal{err}
	}
	ok := false
	for _, t := range s.DTypes {
		ok = ok || t == d
	}
	if !ok {
		return SoftmaxLaunch{}, &Refusal{fmt.Errorf("softmax step %s takes %v, not %s", s.Name, s.DTypes, d)}
	}
	l, err := s.Plan(d, rows, cols, aligned)
	if err != nil {
		return l, &Refusal{err}
	}
	return l, nil
}

// SoftmaxWork is the minimum traffic of softmax: x read once, y written once; FLOPs are not counted
// (about 5 per element: a subtraction, an exp, an addition, a multiply, a comparison).
func SoftmaxWork(d DType, rows, cols int) bench.Work {
	return bench.Work{Bytes: 2 * float64(d.Size()) * float64(rows) * float64(cols)}
}

// Tensor is a device array of float32 or of 16-bit elements.
type Tensor struct {
	DType DType
	F32   *gpu.Buffer[float32]
	U16   *gpu.Buffer[uint16]
}

// DevicePtr is the tensor's address, for kernel arguments.
func (t Tensor) DevicePtr() uintptr {
	if t.DType == F32 {
		return t.F32.DevicePtr()
	}
	return t.U16.DevicePtr()
}

func allocTensor(s *gpu.Session, d DType, n int) (Tensor, error) {
	t := Tensor{DType: d}
	var err error
	if d == F32 {
		t.F32, err = gpu.Alloc[float32](s, n)
	} else {
		t.U16, err = gpu.Alloc[uint16](s, n)
	}
	return t, err
}

func (t Tensor) view(off, n int) (Tensor, error) {
	v := Tensor{DType: t.DType}
	var err error
	if t.DType == F32 {
		v.F32, err = t.F32.View(off, n)
	} else {
		v.U16, err = t.U16.View(off, n)
	}
	return v, err
}

func (t Tensor) upload(vals []float32) error {
	if t.DType == F32 {
		return t.F32.CopyFromHost(vals)
	}
	b := make([]uint16, len(vals))
	for i, v := range vals {
		b[i] = t.DType.Bits16(v)
	}
	return t.U16.CopyFromHost(b)
}

func (t Tensor) poison() error {
	if t.DType == F32 {
		return t.F32.Poison()
	}
	return t.U16.Poison() // gpu.Poison16: a NaN in half and in bfloat16 alike
}

// read copies elements [off, off+n) back as float64.
func (t Tensor) read(off, n int) ([]float64, error) {
	v, err := t.view(off, n)
	if err != nil {
		return nil, err
	}
	out := make([]float64, n)
	if t.DType == F32 {
		h, err := v.F32.ToHost()
		if err != nil {
			return nil, err
		}
		for i, x := range h {
			out[i] = float64(x)
		}
		return out, nil
	}
	h, err := v.U16.ToHost()
	if err != nil {
		return nil, err
	}
	for i, x := range h {
		out[i] = t.DType.Value16(x)
	}
	return out, nil
}

func (t Tensor) free() {
	if t.F32 != nil {
		t.F32.Free()
	}
	if t.U16 != nil {
		t.U16.Free()
	}
}

// nonFinite counts the NaN and Inf elements of t[0:n) on the GPU (util.cu).
func nonFinite(env *lab.Env, t Tensor, n int) (uint64, error) {
	src, err := kr.Source("util.cu")
	if err != nil {
		return 0, err
	}
	prog, err := env.Build(src, "count_nonfinite_f32", "count_nonfinite_16")
	if err != nil {
		return 0, err
	}
	count, err := gpu.Alloc[uint64](env.Session, 1)
	if err != nil {
		return 0, err
	}
	defer count.Free()
	if err := count.Zero(); err != nil {
		return 0, err
	}
	cfg := gpu.Config{Grid: gpu.D1(gpu.WavesGrid(env.Session.Device, n, 256, 1)), Block: gpu.D1(256)}
	if t.DType == F32 {
		k, err := prog.Kernel("count_nonfinite_f32")
		if err == nil {
			err = k.Launch(cfg, t, int64(n), count)
		}
		if err != nil {
			return 0, err
		}
	} else {
		mask := uint32(0x7C00)
		if t.DType == BF16 {
			mask = 0x7F80
		}
		k, err := prog.Kernel("count_nonfinite_16")
		if err == nil {
			err = k.Launch(cfg, t, int64(n), mask, count)
		}
		if err != nil {
			return 0, err
		}
	}
	c, err := count.ToHost()
	if err != nil {
		return 0, err
	}
	return c[0], nil
}

// SoftmaxProblem is a softmax on the GPU: rows x cols inputs of fresh random values (uniform in
// [-4, 4), rounded to the dtype), an output, and the host copy of the inputs for the reference.
type SoftmaxProblem struct {
	DType      DType
	Rows, Cols int
	X, Y       Tensor
	x          []float32
	env        *lab.Env
	owned      []Tensor
	seed       uint64
}

// NewSoftmaxProblem uploads fresh inputs. offset > 0 starts x and y that many elements into their
// allocations (offset 1 gives views that are not 16-byte aligned).
func NewSoftmaxProblem(env *lab.Env, d DType, rows, cols int, seed uint64, offset int) (*SoftmaxProblem, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("softmax: running kernels needs a GPU (%s)", env.Mode)
	}
	if rows < 0 || cols < 0 || offset < 0 {
		return nil, fmt.Errorf("softmax: rows %d, cols %d, offset %d must not be negative", rows, cols, offset)
	}
	n := rows * cols
	p := &SoftmaxProblem{DType: d, Rows: rows, Cols: cols, env: env, seed: seed, x: Uniform(d, n, -4, 4, seed)}
	for _, dst := range []*Tensor{&p.X, &p.Y} {
		whole, err := allocTensor(env.Session, d, n+offset)
		if err != nil {
			p.Free()
			return nil, fmt.Errorf("softmax %s: %w", shape(rows, cols), err)
		}
		p.owned = append(p.owned, whole)
		if *dst, err = whole.view(offset, n); err != nil {
			p.Free()
			return nil, err
		}
	}
	if err := p.X.upload(p.x); err != nil {
		p.Free()
		return nil, err
	}
	return p, nil
}

// Free releases the buffers.
func (p *SoftmaxProblem) Free() {
	for _, t := range p.owned {
		t.free()
	}
	p.owned = nil
}

// Reshape views the same elements as rows x cols (rows * cols must not exceed the problem's).
func (p *SoftmaxProblem) Reshape(rows, cols int) (*SoftmaxProblem, error) {
	n := rows * cols
	if n > p.Rows*p.Cols || rows < 1 || cols < 1 {
		return nil, fmt.Errorf("softmax: cannot view %d elements as %s", p.Rows*p.Cols, shape(rows, cols))
	}
	q := &SoftmaxProblem{DType: p.DType, Rows: rows, Cols: cols, env: p.env, seed: p.seed, x: p.x[:n]}
	var err error
	if q.X, err = p.X.view(0, n); err != nil {
		return nil, err
	}
	if q.Y, err = p.Y.view(0, n); err != nil {
		return nil, err
	}
	return q, nil
}

// Plan is step s's launch on this problem.
func (p *SoftmaxProblem) Plan(s SoftmaxStep) (SoftmaxLaunch, error) {
	return PlanSoftmax(s, p.DType, p.Rows, p.Cols, gpu.Aligned(16, p.X, p.Y))
}

// Launcher compiles step s (or code, a reader's replacement of its file, when not empty) and
// returns a function that queues it.
func (p *SoftmaxProblem) Launcher(s SoftmaxStep, code string) (func() error, SoftmaxLaunch, *lab.Program, error) {
	plan, err := p.Plan(s)
	if err != nil {
		return nil, plan, nil, err
	}
	src := compile.Source{Name: "edited_" + s.File, Code: code}
	if code == "" {
		if src, err = kr.Source(s.File); err != nil {
			return nil, plan, nil, err
		}
	}
	prog, err := p.env.BuildWith(src, compile.Options{Defines: plan.Defines}, plan.Kernel)
	if err != nil {
		return nil, plan, nil, err
	}
	k, err := prog.Kernel(plan.Kernel)
	if err != nil {
		return nil, plan, prog, err
	}
	cfg := gpu.Config{Grid: gpu.D1(plan.Grid), Block: gpu.D1(plan.Block)}
	args := []any{p.X, p.Y, int32(p.Rows), int32(p.Cols)}
	if plan.Vec >= 0 {
		args = append(args, plan.Vec)
	}
	return func() error { return k.Launch(cfg, args...) }, plan, prog, nil
}

// MaxFullCheck is the largest output checked element by element in full; bigger ones are checked
// on SampleRows rows (the first, the last and random ones) plus a count of non-finite values over
// the whole output, so an unwritten element anywhere still fails.
const (
	MaxFullCheck = 1 << 22
	SampleRows   = 24
)

// checkedRows are the rows compared with the reference.
func (p *SoftmaxProblem) checkedRows() []int {
	if p.Rows*p.Cols <= MaxFullCheck {
		rows := make([]int, p.Rows)
		for i := range rows {
			rows[i] = i
		}
		return rows
	}
	r := rand.New(rand.NewPCG(p.seed, 77))
	rows := []int{0, p.Rows - 1}
	for len(rows) < min(SampleRows, p.Rows) {
		rows = append(rows, r.IntN(p.Rows))
	}
	return rows
}

// CompareOutput compares the output already in Y with the float64 reference under tol (nil: the
// dtype's own tolerance) and counts non-finite values over the whole output.
func (p *SoftmaxProblem) CompareOutput(tol *check.Tolerance) (check.Result, error) {
	var got, want []float64
	for _, r := range p.checkedRows() {
		g, err := p.Y.read(r*p.Cols, p.Cols)
		if err != nil {
			return check.Result{}, err
		}
		got = append(got, g...)
		want = append(want, SoftmaxRow(p.x[r*p.Cols:(r+1)*p.Cols])...)
	}
	t := SoftmaxTolerance(p.DType, want)
	if tol != nil {
		t = *tol
	}
	res := check.Compare(got, want, t)
	if len(got) < p.Rows*p.Cols {
		bad, err := nonFinite(p.env, p.Y, p.Rows*p.Cols)
		if err != nil {
			return res, err
		}
		if bad > 0 {
			res.NonFinite += int(bad)
			res.OK = false
		}
	}
	return res, nil
}

// CheckRun runs a launch once on a NaN-poisoned output and compares it with the reference.
func (p *SoftmaxProblem) CheckRun(run func() error) (check.Result, error) {
	if err := p.Y.poison(); err != nil {
		return check.Result{}, err
	}
	if err := run(); err != nil {
		return check.Result{}, err
	}
	if err := p.env.Session.Synchronize(); err != nil {
		return check.Result{}, err
	}
	return p.CompareOutput(nil)
}

// Check runs step s (or code) once on a poisoned output and compares it with the reference.
func (p *SoftmaxProblem) Check(s SoftmaxStep, code string) (check.Result, SoftmaxLaunch, error) {
	run, plan, _, err := p.Launcher(s, code)
	if err != nil {
		return check.Result{}, plan, err
	}
	res, err := p.CheckRun(run)
	return res, plan, err
}

// Checked says what the check covered.
func (p *SoftmaxProblem) Checked() string {
	if p.Rows*p.Cols <= MaxFullCheck {
		return "every element"
	}
	return fmt.Sprintf("%d sampled rows + a NaN count of all", min(SampleRows, p.Rows))
}

// Measure checks step s, then times it, and returns its record.
func (p *SoftmaxProblem) Measure(caseName string, s SoftmaxStep, code, variant string) (record.Record, error) {
	if variant == "" {
		variant = s.Name
	}
	rec := record.Record{Case: caseName, Variant: variant, Kind: "kernel", DType: string(p.DType), Shape: shape(p.Rows, p.Cols), Size: int64(p.Cols)}
	res, plan, err := p.Check(s, code)
	if err != nil {
		return rec, err
	}
	rec.RelL2, rec.MaxAbs, rec.Correct, rec.Tol = res.RelL2, res.MaxAbs, res.OK, res.Tol.Name
	rec.Note = fmt.Sprintf("%s, grid %d x %d", plan.Kernel, plan.Grid, plan.Block)
	if plan.Note != "" {
		rec.Note += "; " + plan.Note
	}
	if !res.OK {
		return rec, fmt.Errorf("softmax %s %s %s: %w", s.Name, p.DType, shape(p.Rows, p.Cols), res.Err())
	}
	run, _, _, err := p.Launcher(s, code)
	if err != nil {
		return rec, err
	}
	return p.env.Measure(rec, SoftmaxWork(p.DType, p.Rows, p.Cols), run)
}

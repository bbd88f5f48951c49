package hopper

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/half"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/lessons/matmul"
)

// ID names the lesson's files: results/08_hopper.json, notebooks/08_hopper.ipynb.
const ID = "08_hopper"

// Article is the lesson's headline shape, lesson 03's: 4096 x 4096 x 4096.
var Article = matmul.Article

// Tolerance is the check of a step of dtype on K-term dot products of 16-bit inputs against the
// float64 product of the same 16-bit inputs: the products are exact, the float32 sums truncate (the
// tensor core's adds), and the output is rounded once to the 16-bit format. The element and L2
// bounds are the format's (check.FP16, check.BF16); near-zero outputs, where a relative bound
// means nothing, are judged by the rounding floor of a K-term float32 sum of terms of RMS 1/3 (two
// inputs uniform in [-1, 1)), at twice float32's unit roundoff for the truncation.
func Tolerance(dtype string, K int) check.Tolerance {
	base := check.FP16
	if dtype == BF16 {
		base = check.BF16
	}
	return base.WithFloor(check.SumFloor(2*check.U32, K, 1.0/3), fmt.Sprintf("float32 tensor-core sums of %d terms of RMS 1/3", K))
}

// Problem is one product on the GPU: 16-bit inputs drawn from a seed and uploaded, the output
// allocated, the elements to check and their float64 reference.
type Problem struct {
	Shape  matmul.Shape
	DType  string
	A, B   []uint16 // the inputs' 16-bit words
	Sample matmul.Sample
	Ad, Bd *gpu.Buffer[uint16]
	Cd     *gpu.Buffer[uint16]
	want   []float64
	env    *lab.Env
	maps   map[[2]int]*gpu.TensorMap // by (matrix 0 = A, 1 = B, 2 = C; box rows)
	// clusters, when above 0, caps a persistent step's grid at that many clusters, so that the
	// tests make one cluster walk many tiles.
	clusters int
}

// Round16 rounds float32 values to dtype's 16-bit words, and returns the words and the values they
// hold (exactly, as float32).
func Round16(dtype string, x []float32) ([]uint16, []float32) {
	words, vals := make([]uint16, len(x)), make([]float32, len(x))
	for i, v := range x {
		if dtype == BF16 {
			h := half.BF16FromFloat32(v)
			words[i], vals[i] = uint16(h), h.Float32()
		} else {
			h := half.FromFloat32(v)
			words[i], vals[i] = uint16(h), h.Float32()
		}
	}
	return words, vals
}

// Value16 is the value of one 16-bit word of dtype.
func Value16(dtype string, w uint16) float64 {
	if dtype == BF16 {
		return half.BF16(w).Float64()
	}
	return half.Half(w).Float64()
}

// DeviceBytes is the device memory of a product of shape s: A, B and C in 16 bits.
func DeviceBytes(s matmul.Shape) int64 {
	return 2 * (int64(s.M)*int64(s.K) + int64(s.K)*int64(s.N) + int64(s.M)*int64(s.N))
}

// NewProblem draws A and B uniformly in [-1, 1) from seed (lesson 03's inputs), rounds them to
// dtype, uploads them, and computes the float64 reference of the rounded inputs on the sample
// (every element of a small product; 4 rows, 4 columns and 512 random elements of a large one).
func NewProblem(env *lab.Env, s matmul.Shape, dtype string, seed uint64) (*Problem, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if err := checkDType(dtype); err != nil {
		return nil, err
	}
	if !env.GPU() {
		return nil, fmt.Errorf("hopper: running kernels needs a GPU (%s)", env.Mode)
	}
	if free, _, err := env.Session.MemInfo(); err == nil && DeviceBytes(s) > free {
		return nil, fmt.Errorf("hopper %v: needs %s of device memory, %s free", s, gpu.FormatBytes(DeviceBytes(s)), gpu.FormatBytes(free))
	}
	a32, b32 := matmul.Inputs(s, seed)
	p := &Problem{Shape: s, DType: dtype, Sample: matmul.SampleOf(s, 4, 4, 512, seed), env: env, maps: map[[2]int]*gpu.TensorMap{}}
	var av, bv []float32
	p.A, av = Round16(dtype, a32)
	p.B, bv = Round16(dtype, b32)
	p.want = matmul.Reference(s, av, bv, p.Sample.Idx)
	var err error
	if p.Ad, err = gpu.Upload(env.Session, p.A); err != nil {
		return nil, fmt.Errorf("hopper %v: uploading A: %w", s, err)
	}
	if p.Bd, err = gpu.Upload(env.Session, p.B); err != nil {
		p.Free()
		return nil, fmt.Errorf("hopper %v: uploading B: %w", s, err)
	}
	if p.Cd, err = gpu.Alloc[uint16](env.Session, s.M*s.N); err != nil {
		p.Free()
		return nil, fmt.Errorf("hopper %v: allocating C: %w", s, err)
	}
	return p, nil
}

// Free releases the problem's device buffers.
func (p *Problem) Free() {
	for _, b := range []*gpu.Buffer[uint16]{p.Ad, p.Bd, p.Cd} {
		b.Free()
	}
}

// Want is the float64 reference at the sampled elements.
func (p *Problem) Want() []float64 { return p.want }

func tensorDType(dtype string) gpu.TensorDType {
	if dtype == BF16 {
		return gpu.TensorBF16
	}
	return gpu.TensorFP16
}

// tensorMap is the map of one of the problem's matrices (0: A, 1: B, 2: C; rows x cols) with boxes
// of boxRows x 64 columns, 128-byte swizzled, made once per matrix and box.
func (p *Problem) tensorMap(which, rows, cols, boxRows int, buf *gpu.Buffer[uint16]) (*gpu.TensorMap, error) {
	key := [2]int{which, boxRows}
	if m, ok := p.maps[key]; ok {
		return m, nil
	}
	m, err := p.env.Session.NewTensorMap(gpu.TensorMapSpec{Base: buf, DType: tensorDType(p.DType), Rows: rows, Cols: cols,
		BoxRows: boxRows, BoxCols: 64, Swizzle: gpu.Swizzle128B})
	if err != nil {
		return nil, fmt.Errorf("hopper %v: %s's tensor map: %w", p.Shape, [3]string{"A", "B", "C"}[which], err)
	}
	p.maps[key] = m
	return m, nil
}

// Launcher plans the step on the problem's shape (refusing what it cannot take before anything
// runs), compiles it (code, when not empty, replaces its source), and returns a function that
// queues one product.
func (p *Problem) Launcher(st Step, code string) (func() error, *lab.Program, gpu.Config, error) {
	d := p.env.Session.Device
	cfg, err := st.Plan(p.Shape, d)
	if err != nil {
		return nil, nil, cfg, err
	}
	if !gpu.Aligned(16, p.Ad, p.Bd, p.Cd) {
		return nil, nil, cfg, fmt.Errorf("hopper %s: the buffers are not 16-byte aligned, which its loads need", st.Name)
	}
	src, err := st.Source(code)
	if err != nil {
		return nil, nil, cfg, err
	}
	prog, err := p.env.BuildWith(src, st.Options(p.DType, d), st.Kernel)
	if err != nil {
		return nil, nil, cfg, err
	}
	k, err := prog.Kernel(st.Kernel)
	if err != nil {
		return nil, prog, cfg, err
	}
	s := p.Shape
	dims := []any{int32(s.M), int32(s.N), int32(s.K)}
	if !st.TMA {
		args := append([]any{p.Ad, p.Bd, p.Cd}, dims...)
		return func() error { return k.Launch(cfg, args...) }, prog, cfg, nil
	}
	ma, err := p.tensorMap(0, s.M, s.K, st.BM, p.Ad) // boxes of BM rows x 64 of K
	if err != nil {
		return nil, prog, cfg, err
	}
	mb, err := p.tensorMap(1, s.K, s.N, 64, p.Bd) // 64 rows of K x 64 columns
	if err != nil {
		return nil, prog, cfg, err
	}
	if st.Cluster > 0 {
		if cfg, err = fitClusters(st, k, cfg, p.clusters); err != nil {
			return nil, prog, cfg, err
		}
	}
	var out any = p.Cd
	if st.StoreBytes > 0 {
		if out, err = p.tensorMap(2, s.M, s.N, 64, p.Cd); err != nil {
			return nil, prog, cfg, err
		}
	}
	args := append([]any{ma, mb, out}, dims...)
	return func() error { return k.Launch(cfg, args...) }, prog, cfg, nil
}

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
	out := make([]float64, len(p.Sample.Idx))
	for i, j := range p.Sample.Idx {
		out[i] = Value16(p.DType, c[j])
	}
	return out, nil
}

// Check runs a step once on a NaN-poisoned C and compares the sampled elements with the
// float64 reference at the step's tolerance. code, when not empty, replaces the step's source.
func (p *Problem) Check(st Step, code string) (check.Result, error) {
	run, _, _, err := p.Launcher(st, code)
	if err != nil {
		return check.Result{}, err
	}
	return p.checkRun(st, run)
}

// checkRun is Check of a launch already made.
func (p *Problem) checkRun(st Step, run func() error) (check.Result, error) {
	got, err := p.Output(run)
	if err != nil {
		return check.Result{}, fmt.Errorf("hopper %s %s on %v: %w", st.Name, p.DType, p.Shape, err)
	}
	return check.Compare(got, p.want, Tolerance(p.DType, p.Shape.K)), nil
}

// Record is the record of a step on this problem, before timing.
func (p *Problem) Record(caseName string, st Step) record.Record {
	note := "checked on " + p.Sample.What
	if st.StageBytes > 0 {
		note += fmt.Sprintf("; %d-stage TMA ring", st.Stages(p.env.Device()))
	}
	return record.Record{Case: caseName, Variant: st.Name, Kind: "kernel", DType: p.DType, Shape: p.Shape.String(),
		Size: int64(p.Shape.M), Tol: Tolerance(p.DType, p.Shape.K).Name, Note: note}
}

// Measure checks a step (a failed check is an error), then times the launch it checked, and
// returns its record.
func (p *Problem) Measure(caseName string, st Step, code string) (record.Record, error) {
	rec := p.Record(caseName, st)
	run, _, _, err := p.Launcher(st, code)
	if err != nil {
		return rec, err
	}
	return measureChecked(p.env, rec, run, work(p.Shape), func() (check.Result, error) { return p.checkRun(st, run) })
}

// measureChecked fills rec with the result of checkRun (which runs run once on a poisoned output and
// compares it with the float64 reference), and, when it passed, times run: the launch that was
// checked is the one timed. A failed check is an error naming the record's step and shape.
func measureChecked(env *lab.Env, rec record.Record, run func() error, w bench.Work, checkRun func() (check.Result, error)) (record.Record, error) {
	res, err := checkRun()
	if err != nil {
		return rec, err
	}
	rec.RelL2, rec.MaxAbs, rec.Correct = res.RelL2, res.MaxAbs, res.OK
	if !res.OK {
		return rec, fmt.Errorf("hopper %s %s on %s: %w", rec.Variant, rec.DType, rec.Shape, res.Err())
	}
	return env.Measure(rec, w, run)
}

// work is the FLOPs and the least memory traffic of a 16-bit product of shape s.
func work(s matmul.Shape) bench.Work {
	return bench.Work{FLOPs: s.FLOPs(), Bytes: float64(DeviceBytes(s))}
}

// Report is the compile report of a step at this problem's launch.
func (p *Problem) Report(st Step) (record.KernelReport, error) { return reportAt(p.Launcher, st) }

// reportAt is the compile report of st at the launch that launcher (a problem's Launcher) makes.
func reportAt(launcher func(Step, string) (func() error, *lab.Program, gpu.Config, error), st Step) (record.KernelReport, error) {
	_, prog, cfg, err := launcher(st, "")
	if err != nil {
		return record.KernelReport{}, err
	}
	return prog.Report(st.Kernel, cfg.Block.Count(), cfg.SharedBytes), nil
}

// What says which elements a check compares.
func (p *Problem) What() string { return p.Sample.What }

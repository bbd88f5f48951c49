package oneflow

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	ko "github.com/cudalessons/cudalessons/kernels/oneflow"
)

// MulN is the article's size: 32M elements.
const MulN = 32 << 20

// MaxNaiveN is the largest n the naive kernel takes: it indexes with a 32-bit int.
const MaxNaiveN = math.MaxInt32

// MulStep is one rung of the elementwise ladder (or one point of step 3's sweep).
type MulStep struct {
	Name string
	File string
	// Kernel is the kernel's name before its dtype suffix; Pack1, when set, is the kernel the step
	// falls back to for pointers that are not 16-byte aligned.
	Kernel, Pack1 string
	// Defines are -D flags the file is compiled with (step 3's packs per thread and cache hint).
	Defines []string
	// PacksPerThread is the 16-byte packs a thread loads per trip of its loop (0: the naive step,
	// one element per thread).
	PacksPerThread int
	// Grid is the rule that sizes the grid of a packed step.
	Grid GridRule
}

// GridRule sizes the grid of a packed step from its work units (PacksPerThread packs each).
type GridRule string

// The grid rules of the sweep.
const (
	// GridArticle is the article's rule: a block of 256 per 256 units, at most 32 waves of resident
	// blocks (then the grid-stride loop gives each thread several units).
	GridArticle GridRule = "article (<= 32 waves)"
	// Grid4Waves is at most 4 waves of resident blocks.
	Grid4Waves GridRule = "<= 4 waves"
	// Grid1Wave is at most one wave: every block resident from the start, long grid-stride loops.
	Grid1Wave GridRule = "<= 1 wave"
)

// GridRules are the rules of the sweep, in table order.
var GridRules = []GridRule{GridArticle, Grid4Waves, Grid1Wave}

// Blocks is the grid of a rule for the given work units on device d.
func (g GridRule) Blocks(d gpu.DeviceInfo, units int) int {
	switch g {
	case Grid4Waves:
		return gpu.WavesGrid(d, units, Block, 4)
	case Grid1Wave:
		return gpu.WavesGrid(d, units, Block, 1)
	}
	return NumBlocks(d, units)
}

// InflightStep is step 3 (3_inflight.cu) with ppt packs per thread per trip, the streaming cache
// hint or not, and a grid rule.
func InflightStep(ppt int, streaming bool, grid GridRule) MulStep {
	hint, how := 0, "plain loads"
	if streaming {
		hint, how = 1, "streaming hint"
	}
	return MulStep{Name: fmt.Sprintf("in flight: %d pack(s)/thread, %s, grid %s", ppt, how, grid), File: "3_inflight.cu",
		Kernel: "mul_inflight", Pack1: "mul_inflight_pack1", Defines: []string{fmt.Sprintf("PPT=%d", ppt), fmt.Sprintf("HINT=%d", hint)},
		PacksPerThread: ppt, Grid: grid}
}

// InflightSweep are the points of step 3's sweep: 1, 2 and 4 packs per thread (32 to 128 bytes of
// loads in flight per thread), with and without the streaming hint, under each grid rule.
func InflightSweep() []MulStep {
	var out []MulStep
	for _, ppt := range []int{1, 2, 4} {
		for _, streaming := range []bool{false, true} {
			for _, g := range GridRules {
				out = append(out, InflightStep(ppt, streaming, g))
			}
		}
	}
	return out
}

// InflightName is the variant of step 3 in the ladder's tables: the sweep's fastest point on the
// GPU that runs it, measured again after the sweep (the choice is not timed with its own samples).
const InflightName = "packed, in flight (tuned)"

// InflightDefault is step 3 as the reader edits it (the file's defaults: 2 packs, plain loads).
var InflightDefault = func() MulStep {
	s := InflightStep(2, false, GridArticle)
	s.Name = "in flight"
	return s
}()

// MulSteps are the elementwise steps, in order; step 3 (InflightSweep, InflightName) is tuned per GPU.
var MulSteps = []MulStep{
	{Name: "naive", File: "1_naive.cu", Kernel: "mul_naive"},
	{Name: "packed", File: "2_packed.cu", Kernel: "mul_packed", Pack1: "mul_pack1", PacksPerThread: 1, Grid: GridArticle},
}

// MulLaunch is how a step runs on given pointers: the kernel picked, the grid, and why.
type MulLaunch struct {
	Kernel string
	Grid   int
	Pack   int
	Note   string
}

// PlanMul picks the kernel and grid for step s on n elements of dtype d at the given pointers,
// and refuses what the step cannot take, before any launch. The packed steps fall back to their
// pack-1 kernel when any pointer is not 16-byte aligned.
func PlanMul(dev gpu.DeviceInfo, s MulStep, d DType, n int, x, y, z gpu.DevicePointer) (MulLaunch, error) {
	if n < 0 {
		return MulLaunch{}, fmt.Errorf("mul %s: n = %d is negative", s.Name, n)
	}
	if s.Kernel == "" {
		return MulLaunch{}, fmt.Errorf("mul: no step %q", s.Name)
	}
	if s.PacksPerThread == 0 {
		if n > MaxNaiveN {
			return MulLaunch{}, fmt.Errorf("mul %s: n = %d is over the naive kernel's limit of %d (it indexes with int); use the packed step", s.Name, n, MaxNaiveN)
		}
		return MulLaunch{Kernel: s.Kernel + "_" + d.suffix(), Grid: max(1, gpu.CeilDiv(n, Block)), Pack: 1}, nil
	}
	if gpu.Aligned(16, x, y, z) {
		units := gpu.CeilDiv(gpu.CeilDiv(n, d.Pack()), s.PacksPerThread)
		return MulLaunch{Kernel: s.Kernel + "_" + d.suffix(), Grid: s.Grid.Blocks(dev, units), Pack: d.Pack()}, nil
	}
	return MulLaunch{Kernel: s.Pack1 + "_" + d.suffix(), Grid: NumBlocks(dev, n), Pack: 1,
		Note: "a pointer is not 16-byte aligned: pack 1"}, nil
}

// MulStepByName finds a step: a rung of the ladder, "in flight" (step 3 with its file's defaults)
// or a point of step 3's sweep.
func MulStepByName(name string) (MulStep, error) {
	for _, s := range append(append(append([]MulStep{}, MulSteps...), InflightDefault), InflightSweep()...) {
		if s.Name == name {
			return s, nil
		}
	}
	return MulStep{}, fmt.Errorf("oneflow: no elementwise step %q", name)
}

// MulWork is what z = x*y must move: two reads and a write per element, one FLOP.
func MulWork(d DType, n int) bench.Work {
	return bench.Work{Bytes: 3 * float64(d.Size()) * float64(n), FLOPs: float64(n)}
}

// MulTolerance is the check of z = x*y: one rounding per element, to float32 or to half.
func MulTolerance(d DType) check.Tolerance {
	if d == F16 {
		return check.FP16Exact
	}
	return check.FP32Exact
}

// MulProblem is z = x*y on the GPU: inputs uploaded, output allocated.
type MulProblem struct {
	DType   DType
	N       int
	X, Y, Z *Buffer
	x, y    []float32
	env     *lab.Env
	bufs    []*Buffer
}

// NewMulProblem uploads fresh random inputs of n elements, each buffer starting offset elements
// into its allocation (offset 1 gives pointers that are not 16-byte aligned).
func NewMulProblem(env *lab.Env, d DType, n int, seed uint64, offset int) (*MulProblem, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("mul: running kernels needs a GPU (%s)", env.Mode)
	}
	if n < 0 || offset < 0 {
		return nil, fmt.Errorf("mul: n = %d and offset = %d must not be negative", n, offset)
	}
	p := &MulProblem{DType: d, N: n, env: env, x: RandomValues(d, n, seed), y: RandomValues(d, n, seed+1000)}
	for _, dst := range []**Buffer{&p.X, &p.Y, &p.Z} {
		b, err := alloc(env.Session, d, n, offset)
		if err != nil {
			p.Free()
			return nil, fmt.Errorf("mul: %w", err)
		}
		p.bufs = append(p.bufs, b)
		*dst = b
	}
	if err := p.X.Upload(p.x); err != nil {
		p.Free()
		return nil, err
	}
	if err := p.Y.Upload(p.y); err != nil {
		p.Free()
		return nil, err
	}
	return p, nil
}

// Free releases the buffers.
func (p *MulProblem) Free() {
	for _, b := range p.bufs {
		b.Free()
	}
	p.bufs = nil
}

// Sub is the problem restricted to its first n elements (views, for the size sweep).
func (p *MulProblem) Sub(n int) (*MulProblem, error) {
	if n > p.N || n < 0 {
		return nil, fmt.Errorf("mul: sub-problem of %d elements from %d", n, p.N)
	}
	q := &MulProblem{DType: p.DType, N: n, env: p.env, x: p.x[:n], y: p.y[:n]}
	var err error
	if q.X, err = p.X.View(0, n); err != nil {
		return nil, err
	}
	if q.Y, err = p.Y.View(0, n); err != nil {
		return nil, err
	}
	if q.Z, err = p.Z.View(0, n); err != nil {
		return nil, err
	}
	return q, nil
}

// MulReference is z = x*y in float64 (the exact product of the stored inputs).
func MulReference(x, y []float32) []float64 {
	out := make([]float64, len(x))
	for i := range x {
		out[i] = float64(x[i]) * float64(y[i])
	}
	return out
}

// Launcher compiles step s (or code, a reader's replacement of its source, when not empty) and
// returns a function that queues it on p. An empty problem launches nothing.
func (p *MulProblem) Launcher(s MulStep, code string) (func() error, MulLaunch, *lab.Program, error) {
	plan, err := PlanMul(p.env.Session.Device, s, p.DType, p.N, p.X, p.Y, p.Z)
	if err != nil {
		return nil, plan, nil, err
	}
	src, err := ko.Source(s.File)
	if err != nil {
		return nil, plan, nil, err
	}
	if code != "" {
		src.Code = code
	}
	prog, err := p.env.BuildWith(src, compile.Options{Defines: s.Defines}, plan.Kernel)
	if err != nil {
		return nil, plan, nil, err
	}
	k, err := prog.Kernel(plan.Kernel)
	if err != nil {
		return nil, plan, prog, err
	}
	if p.N == 0 {
		return func() error { return nil }, plan, prog, nil
	}
	var nArg any = int64(p.N)
	if s.PacksPerThread == 0 {
		nArg = int32(p.N)
	}
	cfg := gpu.Config{Grid: gpu.D1(plan.Grid), Block: gpu.D1(Block)}
	return func() error { return k.Launch(cfg, p.X, p.Y, p.Z, nArg) }, plan, prog, nil
}

// Check runs step s once on a NaN-poisoned output and compares it with the float64 product.
func (p *MulProblem) Check(s MulStep, code string) (check.Result, MulLaunch, error) {
	run, plan, _, err := p.Launcher(s, code)
	if err != nil {
		return check.Result{}, plan, err
	}
	if err := p.Z.Poison(); err != nil {
		return check.Result{}, plan, err
	}
	if err := run(); err != nil {
		return check.Result{}, plan, err
	}
	got, err := p.Z.Read()
	if err != nil {
		return check.Result{}, plan, err
	}
	return compareMul(got, p.x, p.y, MulTolerance(p.DType)), plan, nil
}

// compareMul is check.Compare against x*y without building the float64 reference slice (the
// sweep reaches 256M elements).
func compareMul(got []float64, x, y []float32, tol check.Tolerance) check.Result {
	const chunk = 1 << 20
	r := check.Result{N: len(x), FirstBad: -1, Tol: tol, OK: true}
	if len(got) != len(x) {
		return check.Compare(got, MulReference(x, y), tol)
	}
	// Chunks are compared in parallel (the sweep reaches 256M elements), then combined in order.
	type part struct {
		c        check.Result
		num, den float64
	}
	parts := make([]part, (len(x)+chunk-1)/chunk)
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), max(1, len(parts))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				lo := i * chunk
				hi := min(lo+chunk, len(x))
				want := MulReference(x[lo:hi], y[lo:hi])
				pt := part{c: check.Compare(got[lo:hi], want, tol)}
				for j, w := range want {
					if g := got[lo+j]; !math.IsNaN(g) && !math.IsInf(g, 0) {
						pt.num += (g - w) * (g - w)
						pt.den += w * w
					}
				}
				parts[i] = pt
			}
		}()
	}
	for i := range parts {
		next <- i
	}
	close(next)
	wg.Wait()
	var num, den float64
	for i, pt := range parts {
		c := pt.c
		if c.FirstBad >= 0 && r.FirstBad < 0 {
			r.FirstBad = i*chunk + c.FirstBad
		}
		r.NonFinite += c.NonFinite
		r.Bad += c.Bad
		r.MaxAbs = math.Max(r.MaxAbs, c.MaxAbs)
		num += pt.num
		den += pt.den
	}
	switch {
	case den > 0:
		r.RelL2 = math.Sqrt(num / den)
	case num > 0:
		r.RelL2 = math.Inf(1)
	}
	r.OK = r.NonFinite == 0 && r.Bad == 0 && r.RelL2 <= tol.RelL2
	return r
}

// Measure checks step s, then times it, and returns its record (case "mul").
func (p *MulProblem) Measure(s MulStep, code, variant string) (record.Record, error) {
	tol := MulTolerance(p.DType)
	rec := record.Record{Case: "mul", Variant: variant, Kind: "kernel", DType: string(p.DType), Shape: fmt.Sprintf("n=%d", p.N), Size: int64(p.N), Tol: tol.Name}
	res, plan, err := p.Check(s, code)
	if err != nil {
		return rec, err
	}
	rec.RelL2, rec.MaxAbs, rec.Correct = res.RelL2, res.MaxAbs, res.OK
	rec.Note = fmt.Sprintf("%s, grid %d x %d", plan.Kernel, plan.Grid, Block)
	if plan.Note != "" {
		rec.Note += "; " + plan.Note
	}
	if !res.OK {
		return rec, fmt.Errorf("mul %s %s: %w", s.Name, p.DType, res.Err())
	}
	run, _, _, err := p.Launcher(s, code)
	if err != nil {
		return rec, err
	}
	return p.env.Measure(rec, MulWork(p.DType, p.N), run)
}

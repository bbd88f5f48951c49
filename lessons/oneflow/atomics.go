package oneflow

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/half"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	ko "github.com/cudalessons/cudalessons/kernels/oneflow"
)

// DotN is the article's size for the atomics: 32M halves.
const DotN = 32 << 20

// DotValue is the pinned input: every x and y is the half nearest 0.1 (0.0999755859375). The
// time of a same-address atomic depends on the values (the article notes all-zero inputs run
// several times faster), so the lesson fixes them and says so.
const DotValue = 0.1

// AtomicStep is one rung of the atomics ladder.
type AtomicStep struct {
	Name   string
	File   string
	Kernel string
	// Float is true for the block-reduce step, which accumulates in a float.
	Float bool
}

// AtomicSteps are the atomics steps, in order.
var AtomicSteps = []AtomicStep{
	{"atomicAdd(half)", "a_1_half_atomic.cu", "dot_half_atomic", false},
	{"pack 2 -> atomicAdd(half2)", "a_2_half2_atomic.cu", "dot_half2_atomic", false},
	{"fast specialised (half2, zero lane)", "a_3_fast_specialized.cu", "dot_fast_atomic", false},
	{"block reduce, 1 float atomic/block", "a_4_block_reduce.cu", "dot_block_reduce", true},
}

// DotGrid is the article's launch: n/256 blocks of 256, one thread per element.
func DotGrid(n int) int { return max(1, gpu.CeilDiv(n, Block)) }

// DotShape is the shape of the dot product's records: n, the values and the grid.
func DotShape(n int) string {
	return fmt.Sprintf("n=%d, x=y=%.10g, grid %d x %d", n, RoundHalf(DotValue), DotGrid(n), Block)
}

// ValidateDot refuses a dot product the kernels cannot take, before any launch.
func ValidateDot(n int) error {
	if n < 0 {
		return fmt.Errorf("dot: n = %d is negative", n)
	}
	if n > math.MaxInt32-Block {
		return fmt.Errorf("dot: n = %d is over the atomic kernels' limit of %d (they index with int)", n, math.MaxInt32-Block)
	}
	return nil
}

// SeqHalfSum is a half accumulator that starts at 0 and adds p, rounded to half after every
// addition, count times: what a same-address half atomic computes when every term is p (the order
// of the atomics cannot matter when the terms are equal). Once the sum's spacing is more than twice
// p, p rounds away and the sum stops growing; the loop stops there too.
func SeqHalfSum(p float64, count int) float64 {
	s := 0.0
	for i := 0; i < count; i++ {
		next := RoundHalf(s + p)
		if next == s {
			break
		}
		s = next
	}
	return s
}

// SeqFloatSum is the float32 analogue of SeqHalfSum: count additions of p, each rounded to float32.
func SeqFloatSum(p float32, count int) float32 {
	var s float32
	for i := 0; i < count; i++ {
		next := s + p
		if next == s {
			break
		}
		s = next
	}
	return s
}

// DotModel is what each step must return on n pinned inputs (every x and y equal to
// RoundHalf(DotValue)), modelling its own accumulation exactly, and the float64 answer.
type DotModel struct {
	Truth float64            // n * x * y in float64
	Want  map[string]float64 // per step name
}

// PinnedDotModel computes the model answers for n pinned inputs (n a multiple of 256 for the
// block-reduce model: every block then adds the same partial sum, and order cannot matter).
func PinnedDotModel(n int) DotModel {
	v := RoundHalf(DotValue)
	prod := v * v        // exact in float64
	p := RoundHalf(prod) // __hmul rounds the product to half
	m := DotModel{Truth: float64(n) * prod, Want: map[string]float64{}}
	m.Want[AtomicSteps[0].Name] = SeqHalfSum(p, n)
	// half2: lane 0 gets the products of the pairs (and the odd last element), lane 1 those of the
	// pairs; the host adds the two lanes and rounds once, like a final __hadd.
	lane0 := SeqHalfSum(p, n/2+n%2)
	lane1 := SeqHalfSum(p, n/2)
	m.Want[AtomicSteps[1].Name] = RoundHalf(lane0 + lane1)
	m.Want[AtomicSteps[2].Name] = SeqHalfSum(p, n)
	// block reduce: products exact in float; a block of 256 equal products sums exactly.
	blocks := n / Block
	m.Want[AtomicSteps[3].Name] = float64(SeqFloatSum(float32(prod*Block), blocks))
	return m
}

// DotProblem is a half dot product on the GPU.
type DotProblem struct {
	N      int
	X, Y   *gpu.Buffer[half.Half]
	Out    *gpu.Buffer[half.Half] // two halves, 4-byte aligned
	OutF   *gpu.Buffer[float32]
	x, y   []float32
	env    *lab.Env
	outOff int
	outLen int
}

// NewDotProblem uploads x and y (values already representable in half).
func NewDotProblem(env *lab.Env, x, y []float32) (*DotProblem, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("dot: running kernels needs a GPU (%s)", env.Mode)
	}
	if len(x) != len(y) {
		return nil, fmt.Errorf("dot: x has %d elements and y %d", len(x), len(y))
	}
	if err := ValidateDot(len(x)); err != nil {
		return nil, err
	}
	p := &DotProblem{N: len(x), x: x, y: y, env: env, outOff: 0, outLen: 2}
	var err error
	if p.X, err = gpu.Upload(env.Session, half.FromFloat32s(x)); err != nil {
		return nil, fmt.Errorf("dot: %w", err)
	}
	if p.Y, err = gpu.Upload(env.Session, half.FromFloat32s(y)); err != nil {
		p.Free()
		return nil, fmt.Errorf("dot: %w", err)
	}
	if p.Out, err = gpu.Alloc[half.Half](env.Session, 2); err != nil {
		p.Free()
		return nil, err
	}
	if p.OutF, err = gpu.Alloc[float32](env.Session, 1); err != nil {
		p.Free()
		return nil, err
	}
	return p, nil
}

// PinnedDot is the article's problem: n pinned halves in x and y.
func PinnedDot(env *lab.Env, n int) (*DotProblem, error) {
	v := float32(RoundHalf(DotValue))
	x := make([]float32, n)
	for i := range x {
		x[i] = v
	}
	return NewDotProblem(env, x, x)
}

// SetTarget makes the fast specialised step add into Out[off] of an output of length halves
// (tests use it to reach its three branches). The default is 0 of 2.
func (p *DotProblem) SetTarget(off, length int) error {
	if length < 1 || length > 2 || off < 0 || off >= length {
		return fmt.Errorf("dot: target %d of %d: the output has 2 halves", off, length)
	}
	p.outOff, p.outLen = off, length
	return nil
}

// Free releases the buffers.
func (p *DotProblem) Free() {
	for _, b := range []interface{ Free() error }{p.X, p.Y, p.Out, p.OutF} {
		if b != nil {
			b.Free()
		}
	}
}

// Launcher compiles a step and returns a function that zeroes the accumulator and queues the
// kernel (the 2- or 4-byte memset is inside the timed work; it costs about a microsecond).
func (p *DotProblem) Launcher(s AtomicStep, code string) (func() error, *lab.Program, error) {
	src, err := ko.Source(s.File)
	if err != nil {
		return nil, nil, err
	}
	if code != "" {
		src.Code = code
	}
	prog, err := p.env.Build(src, s.Kernel)
	if err != nil {
		return nil, nil, err
	}
	k, err := prog.Kernel(s.Kernel)
	if err != nil {
		return nil, prog, err
	}
	cfg := gpu.Config{Grid: gpu.D1(DotGrid(p.N)), Block: gpu.D1(Block)}
	var args []any
	switch s.Kernel {
	case "dot_fast_atomic":
		args = []any{p.X, p.Y, p.Out, int32(p.N), int32(p.outOff), int32(p.outLen)}
	case "dot_block_reduce":
		args = []any{p.X, p.Y, p.OutF, int64(p.N)}
	default:
		args = []any{p.X, p.Y, p.Out, int32(p.N)}
	}
	return func() error {
		if s.Float {
			if err := p.OutF.Zero(); err != nil {
				return err
			}
		} else if err := p.Out.Zero(); err != nil {
			return err
		}
		if p.N == 0 {
			return nil
		}
		return k.Launch(cfg, args...)
	}, prog, nil
}

// Result runs a step once and returns its answer: the float accumulator, the sum of the two half
// lanes rounded to half (pack 2), or the target half.
func (p *DotProblem) Result(s AtomicStep, code string) (float64, error) {
	run, _, err := p.Launcher(s, code)
	if err != nil {
		return 0, err
	}
	if err := run(); err != nil {
		return 0, err
	}
	if s.Float {
		f, err := p.OutF.ToHost()
		if err != nil {
			return 0, err
		}
		return float64(f[0]), nil
	}
	h, err := p.Out.ToHost()
	if err != nil {
		return 0, err
	}
	if s.Kernel == "dot_half2_atomic" {
		return RoundHalf(h[0].Float64() + h[1].Float64()), nil
	}
	return h[p.outOff].Float64(), nil
}

// DotMethod is the measurement method of the atomics: the half atomic step takes about 200 ms a
// run on an H100, so one warm-up and five timed runs (with the L2 flushed before each).
var DotMethod = bench.Method{Warmup: 1, Reps: 5, FlushL2: true}

// MeasureDot runs every atomics step the GPU runs on the pinned problem: check against the model, time, and
// add the drift records (each answer against the float64 one).
func MeasureDot(env *lab.Env, n int, run *record.Run, progress func(string)) error {
	if n%Block != 0 {
		return fmt.Errorf("dot: the pinned model needs n a multiple of %d, got %d", Block, n)
	}
	p, err := PinnedDot(env, n)
	if err != nil {
		return err
	}
	defer p.Free()
	model := PinnedDotModel(n)
	saved := env.Bench.Method
	env.Bench.Method = DotMethod
	defer func() { env.Bench.Method = saved }()
	refused := refusedOn(env.Device())
	for _, s := range AtomicSteps {
		if _, no := refused[s.Name]; no {
			continue // RunSection records it as refused
		}
		rec, drift, err := measureDotStep(env, p, model, s, "")
		if err != nil {
			return err
		}
		if _, prog, err := p.Launcher(s, ""); err == nil {
			run.Kernels = append(run.Kernels, prog.Report(s.Kernel, Block, 0))
		}
		run.Add(rec)
		run.Add(drift)
		progress(s.Name)
	}
	return nil
}

// measureDotStep checks step s (code, when not empty, replaces its file) on the pinned problem
// against the model of its accumulation, then times it with the env's current method; it returns
// the record and the drift record (the answer against the float64 one).
func measureDotStep(env *lab.Env, p *DotProblem, model DotModel, s AtomicStep, code string) (rec, drift record.Record, err error) {
	n := p.N
	shape := DotShape(n)
	got, err := p.Result(s, code)
	if err != nil {
		return rec, drift, fmt.Errorf("dot %s: %w", s.Name, err)
	}
	want := model.Want[s.Name]
	dtype := "float16 (half accumulator)"
	if s.Float {
		dtype = "float16 in, float32 accumulator"
	}
	rec = record.Record{Case: "atomics", Variant: s.Name, Kind: "kernel", DType: dtype, Shape: shape, Size: int64(n),
		MaxAbs: math.Abs(got - want), Correct: got == want, Tol: "exact model of its accumulation",
		Note: fmt.Sprintf("result %.10g, model %.10g", got, want)}
	if !rec.Correct {
		return rec, drift, fmt.Errorf("dot %s: result %.10g, but a %s accumulation of these inputs gives exactly %.10g", s.Name, got, dtype, want)
	}
	launch, _, err := p.Launcher(s, code)
	if err != nil {
		return rec, drift, err
	}
	if rec, err = env.Measure(rec, bench.Work{Bytes: 4 * float64(n), FLOPs: 2 * float64(n)}, launch); err != nil {
		return rec, drift, err
	}
	drift = record.Record{Case: "drift", Variant: s.Name, Kind: "reference", DType: dtype, Shape: shape, Size: int64(n),
		RelL2: math.Abs(got-model.Truth) / model.Truth, MaxAbs: math.Abs(got - model.Truth), Correct: true,
		Note: fmt.Sprintf("%.10g|%.10g", got, model.Truth)}
	return rec, drift, nil
}

// Package vecadd is lesson 00, your first kernel: c = a + b on float32 in three steps (naive,
// grid-stride, float4), each checked against a float64 CPU reference with NaN-poisoned outputs and
// measured against the GPU's own device-to-device copy, the practical ceiling of a kernel that only
// moves memory. It also shows why the measurement method matters, by timing the same kernel badly.
package vecadd

import (
	"fmt"
	"math/rand/v2"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	kv "github.com/cudalessons/cudalessons/kernels/vecadd"
)

// ID names the lesson's results and notebook.
const ID = "00_setup"

// Block is the block size every step launches with.
const Block = 256

// Step is one rung of the ladder: its source file and kernel, and how it is launched for n elements.
type Step struct {
	Name   string
	File   string
	Kernel string
	// Grid is the number of blocks for n elements on device d.
	Grid func(d gpu.DeviceInfo, n int) int
	// Args are the kernel's arguments after the three pointers.
	Args func(n int) []any
}

// Waves bounds the grid of the grid-stride kernels: 4 waves of the blocks the GPU keeps resident.
const Waves = 4

// Steps are the lesson's kernels, in order.
var Steps = []Step{
	{"naive", "1_naive.cu", "add_naive",
		func(_ gpu.DeviceInfo, n int) int { return gpu.CeilDiv(n, Block) },
		func(n int) []any { return []any{int32(n)} }},
	{"grid-stride", "2_gridstride.cu", "add_gridstride",
		func(d gpu.DeviceInfo, n int) int { return gpu.WavesGrid(d, n, Block, Waves) },
		func(n int) []any { return []any{int64(n)} }},
	{"float4", "3_float4.cu", "add_float4",
		func(d gpu.DeviceInfo, n int) int { return gpu.WavesGrid(d, gpu.CeilDiv(n, 4), Block, Waves) },
		func(n int) []any { return []any{int64(n)} }},
}

// StepByName finds a step.
func StepByName(name string) (Step, error) {
	for _, s := range Steps {
		if s.Name == name {
			return s, nil
		}
	}
	return Step{}, fmt.Errorf("vecadd: no step %q", name)
}

// MaxNaiveN is the largest n the naive kernel takes: it indexes with a 32-bit int.
const MaxNaiveN = 1<<31 - 1

// Validate refuses what a step cannot take, before any launch.
func (s Step) Validate(n int) error {
	if n < 0 {
		return fmt.Errorf("vecadd %s: n = %d is negative", s.Name, n)
	}
	if s.Kernel == "add_naive" && n > MaxNaiveN {
		return fmt.Errorf("vecadd %s: n = %d is over the naive kernel's limit of %d (it indexes with int); use grid-stride", s.Name, n, MaxNaiveN)
	}
	return nil
}

// Inputs draws a and b uniformly in [-1, 1) from a seeded generator.
func Inputs(n int, seed uint64) (a, b []float32) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	a, b = make([]float32, n), make([]float32, n)
	for i := range a {
		a[i] = 2*r.Float32() - 1
		b[i] = 2*r.Float32() - 1
	}
	return a, b
}

// Reference is c = a + b in float64.
func Reference(a, b []float32) []float64 {
	c := make([]float64, len(a))
	for i := range a {
		c[i] = float64(a[i]) + float64(b[i])
	}
	return c
}

// Work is what c = a + b must move: two reads and one write of 4 bytes per element, one FLOP.
func Work(n int) bench.Work { return bench.Work{Bytes: 12 * float64(n), FLOPs: float64(n)} }

// Tolerance: one float32 rounding per element, so the result must be the correctly rounded sum.
var Tolerance = check.FP32Exact

// Problem is a vector add of n elements on the GPU: inputs uploaded, output allocated.
type Problem struct {
	N       int
	A, B, C *gpu.Buffer[float32]
	want    []float64
	env     *lab.Env
	owned   []*gpu.Buffer[float32]
}

// NewProblem uploads fresh random inputs of n elements and computes the reference.
func NewProblem(env *lab.Env, n int, seed uint64) (*Problem, error) {
	return NewProblemAt(env, n, seed, 0)
}

// NewProblemAt is NewProblem with each buffer starting offset elements into its allocation, so that
// a test can hand the kernels pointers that are not 16-byte aligned.
func NewProblemAt(env *lab.Env, n int, seed uint64, offset int) (*Problem, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("vecadd: running kernels needs a GPU (%s)", env.Mode)
	}
	a, b := Inputs(n, seed)
	p := &Problem{N: n, want: Reference(a, b), env: env}
	for _, buf := range []**gpu.Buffer[float32]{&p.A, &p.B, &p.C} {
		whole, err := gpu.Alloc[float32](env.Session, n+offset)
		if err != nil {
			p.Free()
			return nil, err
		}
		p.owned = append(p.owned, whole)
		if *buf, err = whole.View(offset, n); err != nil {
			p.Free()
			return nil, err
		}
	}
	if err := p.A.CopyFromHost(a); err != nil {
		p.Free()
		return nil, err
	}
	if err := p.B.CopyFromHost(b); err != nil {
		p.Free()
		return nil, err
	}
	return p, nil
}

// Free releases the problem's buffers.
func (p *Problem) Free() {
	for _, b := range p.owned {
		b.Free()
	}
	p.owned = nil
}

// Launcher compiles a step and returns a function that launches it on p (queues it, no wait).
// The float4 step falls back to the grid-stride kernel when a buffer is not 16-byte aligned, and
// an empty problem launches nothing.
func Launcher(env *lab.Env, s Step, src string, p *Problem) (func() error, *lab.Program, error) {
	if err := s.Validate(p.N); err != nil {
		return nil, nil, err
	}
	if s.Kernel == "add_float4" && !gpu.Aligned(16, p.A, p.B, p.C) {
		s, src = Steps[1], ""
	}
	source, err := sourceOf(s, src)
	if err != nil {
		return nil, nil, err
	}
	prog, err := env.Build(source, s.Kernel)
	if err != nil {
		return nil, nil, err
	}
	k, err := prog.Kernel(s.Kernel)
	if err != nil {
		return nil, prog, err
	}
	if p.N == 0 {
		return func() error { return nil }, prog, nil
	}
	cfg := gpu.Config{Grid: gpu.D1(s.Grid(env.Session.Device, p.N)), Block: gpu.D1(Block)}
	args := append([]any{p.A, p.B, p.C}, s.Args(p.N)...)
	return func() error { return k.Launch(cfg, args...) }, prog, nil
}

// sourceOf is the step's file, or code in its place when code is not empty (a reader's kernel).
func sourceOf(s Step, code string) (compile.Source, error) {
	if code != "" {
		return compile.Source{Name: s.File, Code: code}, nil
	}
	return kv.Source(s.File)
}

// Check runs a step once on a NaN-poisoned output and compares it with the reference. code, when
// not empty, replaces the step's source (a reader's edited kernel).
func (p *Problem) Check(s Step, code string) (check.Result, error) {
	run, _, err := Launcher(p.env, s, code, p)
	if err != nil {
		return check.Result{}, err
	}
	if err := p.C.Poison(); err != nil {
		return check.Result{}, err
	}
	if err := run(); err != nil {
		return check.Result{}, err
	}
	got, err := p.C.ToHost()
	if err != nil {
		return check.Result{}, err
	}
	return check.Compare(check.Float64s(got), p.want, Tolerance), nil
}

// Measure checks a step, then times it, and returns its record.
func (p *Problem) Measure(s Step, code string) (record.Record, error) {
	rec := record.Record{Case: "add", Variant: s.Name, Kind: "kernel", DType: "float32", Shape: fmt.Sprintf("n=%d", p.N), Size: int64(p.N), Tol: Tolerance.Name}
	res, err := p.Check(s, code)
	if err != nil {
		return rec, err
	}
	rec.RelL2, rec.MaxAbs, rec.Correct = res.RelL2, res.MaxAbs, res.OK
	if !res.OK {
		return rec, fmt.Errorf("vecadd %s: %w", s.Name, res.Err())
	}
	run, _, err := Launcher(p.env, s, code, p)
	if err != nil {
		return rec, err
	}
	return p.env.Measure(rec, Work(p.N), run)
}

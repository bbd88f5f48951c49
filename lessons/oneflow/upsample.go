package oneflow

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	ko "github.com/cudalessons/cudalessons/kernels/oneflow"
)

// The upsample shapes (N, C, H, W) of the input: the article's, and a large one where bandwidth
// dominates (256 MiB of float input, 1 GiB of output).
var (
	ArticleShape = [4]int{16, 32, 80, 80}
	LargeShape   = [4]int{16, 64, 256, 256}
)

// UpStep is one upsample kernel: generic (divisions and an inverse map) or pack2x (specialised).
type UpStep struct {
	Name string
	File string
}

// UpSteps are the upsample steps, in order.
var UpSteps = []UpStep{{"generic", "u_1_generic.cu"}, {"pack2x", "u_2_pack2x.cu"}}

// Directions of the upsample.
const (
	Forward  = "forward"
	Backward = "backward"
)

// ValidateUpsample refuses a shape the kernels cannot take, with the limit it breaks, before any
// launch. A shape with a zero dimension is valid: it has nothing to compute.
func ValidateUpsample(shape [4]int) error {
	for i, v := range shape {
		if v < 0 {
			return fmt.Errorf("upsample: dimension %d of %s is negative", i, fmtShape(shape))
		}
	}
	in := int64(shape[0]) * int64(shape[1]) * int64(shape[2]) * int64(shape[3])
	if in > math.MaxInt32/4 {
		return fmt.Errorf("upsample: %s has %d input elements; its output of %d elements is over the kernels' 32-bit index limit of %d",
			fmtShape(shape), in, 4*in, math.MaxInt32)
	}
	return nil
}

// UpLaunch is the kernel and grid chosen for a step, direction and set of pointers.
type UpLaunch struct {
	Kernel string
	Grid   int
	Note   string
	// Generic is true when the generic kernel runs (asked for, or the fallback).
	Generic bool
}

// PlanUpsample picks the kernel and grid. The pack2x kernels need the packed side (the output in
// forward, dy in backward) on a 2*sizeof(T) boundary; otherwise the generic kernel runs.
func PlanUpsample(dev gpu.DeviceInfo, s UpStep, d DType, dir string, shape [4]int, packed gpu.DevicePointer) (UpLaunch, error) {
	if err := ValidateUpsample(shape); err != nil {
		return UpLaunch{}, err
	}
	if dir != Forward && dir != Backward {
		return UpLaunch{}, fmt.Errorf("upsample: direction %q is neither %q nor %q", dir, Forward, Backward)
	}
	in := shape[0] * shape[1] * shape[2] * shape[3]
	short := "fwd"
	if dir == Backward {
		short = "bwd"
	}
	generic := UpLaunch{Kernel: "up_generic_" + short + "_" + d.suffix(), Generic: true}
	if dir == Forward {
		generic.Grid = NumBlocks(dev, 4*in)
	} else {
		generic.Grid = NumBlocks(dev, in)
	}
	switch s.Name {
	case "generic":
		return generic, nil
	case "pack2x":
		if !gpu.Aligned(uintptr(2*d.Size()), packed) {
			generic.Note = fmt.Sprintf("the packed pointer is not %d-byte aligned: generic kernel", 2*d.Size())
			return generic, nil
		}
		return UpLaunch{Kernel: "up2x_" + short + "_" + d.suffix(), Grid: NumBlocks(dev, in)}, nil
	}
	return UpLaunch{}, fmt.Errorf("upsample: no step %q", s.Name)
}

// UpForwardReference is the nearest 2x upsample of x (shape N,C,H,W) in float64.
func UpForwardReference(x []float32, shape [4]int) []float64 {
	nc, h, w := shape[0]*shape[1], shape[2], shape[3]
	out := make([]float64, 4*len(x))
	for c := 0; c < nc; c++ {
		for oy := 0; oy < 2*h; oy++ {
			for ox := 0; ox < 2*w; ox++ {
				out[(c*2*h+oy)*2*w+ox] = float64(x[(c*h+oy/2)*w+ox/2])
			}
		}
	}
	return out
}

// UpBackwardReference is the gradient of the upsample for output gradient dy: each input element
// gets the float64 sum of the four outputs it was copied to.
func UpBackwardReference(dy []float32, shape [4]int) []float64 {
	nc, h, w := shape[0]*shape[1], shape[2], shape[3]
	dx := make([]float64, nc*h*w)
	for c := 0; c < nc; c++ {
		for oy := 0; oy < 2*h; oy++ {
			for ox := 0; ox < 2*w; ox++ {
				dx[(c*h+oy/2)*w+ox/2] += float64(dy[(c*2*h+oy)*2*w+ox])
			}
		}
	}
	return dx
}

// UpTolerance: the forward copies (exact); the backward sums four values in float and rounds once.
func UpTolerance(d DType, dir string) check.Tolerance {
	switch {
	case dir == Forward:
		return check.Tolerance{Name: "exact copy", RelL2: 0, Rel: 0, Abs: 0, Why: "nearest upsampling copies values"}
	case d == F16:
		return check.FP16
	}
	return check.FP32
}

// UpWork is what one direction must move: the input read and the output (4x) written, or the
// reverse; no FLOPs forward, three additions per input element backward.
func UpWork(d DType, shape [4]int, dir string) bench.Work {
	in := float64(shape[0]) * float64(shape[1]) * float64(shape[2]) * float64(shape[3])
	w := bench.Work{Bytes: 5 * in * float64(d.Size())}
	if dir == Backward {
		w.FLOPs = 3 * in
	}
	return w
}

// UpProblem is one upsample on the GPU: x (input) and y (output) for the forward, dy and dx for
// the backward, all allocated with an optional element offset (misaligned views for tests).
type UpProblem struct {
	DType  DType
	Shape  [4]int
	X, Y   *Buffer // forward: in, out
	DY, DX *Buffer // backward: in (4x), out
	x, dy  []float32
	env    *lab.Env
	bufs   []*Buffer
	ref    map[string][]float64 // float64 references by direction, computed once
}

// NewUpProblem uploads random x and dy for shape.
func NewUpProblem(env *lab.Env, d DType, shape [4]int, seed uint64, offset int) (*UpProblem, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("upsample: running kernels needs a GPU (%s)", env.Mode)
	}
	if err := ValidateUpsample(shape); err != nil {
		return nil, err
	}
	in := shape[0] * shape[1] * shape[2] * shape[3]
	p := &UpProblem{DType: d, Shape: shape, env: env, x: RandomValues(d, in, seed), dy: RandomValues(d, 4*in, seed+7)}
	for _, b := range []struct {
		dst **Buffer
		n   int
	}{{&p.X, in}, {&p.Y, 4 * in}, {&p.DY, 4 * in}, {&p.DX, in}} {
		buf, err := alloc(env.Session, d, b.n, offset)
		if err != nil {
			p.Free()
			return nil, fmt.Errorf("upsample %s: %w", fmtShape(shape), err)
		}
		p.bufs = append(p.bufs, buf)
		*b.dst = buf
	}
	if err := p.X.Upload(p.x); err != nil {
		p.Free()
		return nil, err
	}
	if err := p.DY.Upload(p.dy); err != nil {
		p.Free()
		return nil, err
	}
	return p, nil
}

// Free releases the buffers.
func (p *UpProblem) Free() {
	for _, b := range p.bufs {
		b.Free()
	}
	p.bufs = nil
}

// Launcher compiles step s for one direction (code, when not empty, replaces its source) and
// returns a function that queues it. An empty tensor launches nothing.
func (p *UpProblem) Launcher(s UpStep, dir, code string) (func() error, UpLaunch, *lab.Program, error) {
	packed := p.Y
	if dir == Backward {
		packed = p.DY
	}
	plan, err := PlanUpsample(p.env.Session.Device, s, p.DType, dir, p.Shape, packed)
	if err != nil {
		return nil, plan, nil, err
	}
	file := s.File
	if plan.Generic {
		file = UpSteps[0].File
		if s.Name != "generic" {
			code = "" // the reader's pack2x code is not the fallback
		}
	}
	src, err := ko.Source(file)
	if err != nil {
		return nil, plan, nil, err
	}
	if code != "" {
		src.Code = code
	}
	prog, err := p.env.Build(src, plan.Kernel)
	if err != nil {
		return nil, plan, nil, err
	}
	k, err := prog.Kernel(plan.Kernel)
	if err != nil {
		return nil, plan, prog, err
	}
	n, c, h, w := p.Shape[0], p.Shape[1], p.Shape[2], p.Shape[3]
	if n*c*h*w == 0 {
		return func() error { return nil }, plan, prog, nil
	}
	src1, dst1 := p.X, p.Y
	if dir == Backward {
		src1, dst1 = p.DY, p.DX
	}
	var args []any
	if plan.Generic {
		args = []any{src1, dst1, int32(n * c), int32(h), int32(w), int32(2 * h), int32(2 * w)}
	} else {
		args = []any{src1, dst1, int32(n * c * h * w), int32(h), int32(w)}
	}
	cfg := gpu.Config{Grid: gpu.D1(plan.Grid), Block: gpu.D1(Block)}
	return func() error { return k.Launch(cfg, args...) }, plan, prog, nil
}

// Check runs a step once on a NaN-poisoned output and compares it with the float64 reference.
func (p *UpProblem) Check(s UpStep, dir, code string) (check.Result, UpLaunch, error) {
	run, plan, _, err := p.Launcher(s, dir, code)
	if err != nil {
		return check.Result{}, plan, err
	}
	res, err := p.checkRun(dir, run)
	return res, plan, err
}

// checkRun runs a launch function of one direction once on a poisoned output and compares the
// output with the float64 reference.
func (p *UpProblem) checkRun(dir string, run func() error) (check.Result, error) {
	out := p.Y
	if dir == Backward {
		out = p.DX
	}
	if err := out.Poison(); err != nil {
		return check.Result{}, err
	}
	if err := run(); err != nil {
		return check.Result{}, err
	}
	got, err := out.Read()
	if err != nil {
		return check.Result{}, err
	}
	return check.Compare(got, p.reference(dir), UpTolerance(p.DType, dir)), nil
}

// reference is the float64 answer of one direction, computed on first use.
func (p *UpProblem) reference(dir string) []float64 {
	if p.ref == nil {
		p.ref = map[string][]float64{}
	}
	if r, ok := p.ref[dir]; ok {
		return r
	}
	r := UpBackwardReference(p.dy, p.Shape)
	if dir == Forward {
		r = UpForwardReference(p.x, p.Shape)
	}
	p.ref[dir] = r
	return r
}

// Measure checks a step in one direction, then times it (case "upsample forward" or "upsample
// backward", Size the number of input elements).
func (p *UpProblem) Measure(s UpStep, dir, code string) (record.Record, error) {
	tol := UpTolerance(p.DType, dir)
	in := p.Shape[0] * p.Shape[1] * p.Shape[2] * p.Shape[3]
	rec := record.Record{Case: "upsample " + dir, Variant: s.Name, Kind: "kernel", DType: string(p.DType), Shape: fmtShape(p.Shape), Size: int64(in), Tol: tol.Name}
	res, plan, err := p.Check(s, dir, code)
	if err != nil {
		return rec, err
	}
	rec.RelL2, rec.MaxAbs, rec.Correct = res.RelL2, res.MaxAbs, res.OK
	rec.Note = fmt.Sprintf("%s, grid %d x %d", plan.Kernel, plan.Grid, Block)
	if plan.Note != "" {
		rec.Note += "; " + plan.Note
	}
	if !res.OK {
		return rec, fmt.Errorf("upsample %s %s %s %s: %w", s.Name, dir, p.DType, fmtShape(p.Shape), res.Err())
	}
	run, _, _, err := p.Launcher(s, dir, code)
	if err != nil {
		return rec, err
	}
	return p.env.Measure(rec, UpWork(p.DType, p.Shape, dir), run)
}

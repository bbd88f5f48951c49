package reduce

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/autograd"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/show"
	kr "github.com/cudalessons/cudalessons/kernels/reduce"
)

// SplitRowsMaxCols is the longest row step 4 takes in the op's dispatch on GPUs without
// clusters: its second read of a 256 KB row still comes from L2.
const SplitRowsMaxCols = 65536

// ClusterMaxCols is the longest row step 8 takes in the op's dispatch on Hopper; longer rows go to
// step 11 on any GPU that has it. In the lesson's recorded H100 run (2026-11-26, 1 GB of rows) both
// reached 93.1% of the copy bandwidth at 262144 floats; at 393216 step 8 (a cluster of 12) 85.6%
// and step 11 94.4%.
const ClusterMaxCols = 262144

// PickSoftmax is the step the softmax op runs on an input: 16-bit rows take step 7; float32 rows
// of at most 1024 take step 6 (a warp per row); on Hopper (clusters) step 8 reads rows of up to
// ClusterMaxCols once; elsewhere step 4 takes many moderate rows (one block per row); longer rows
// go to step 11 (teams of resident blocks, x read once, compute capability 8.0), and the rest,
// with what step 11 refuses (rows past its shared memory, older GPUs), to step 9 (a row over many
// blocks).
func PickSoftmax(in SoftmaxInput) SoftmaxStep {
	if in.DType != F32 {
		return SoftmaxSteps[6]
	}
	if in.Cols <= WarpRowMaxCols {
		return SoftmaxSteps[5]
	}
	if in.Cols <= ClusterMaxCols {
		if in.Device.CC() >= 90 {
			if _, err := PlanSoftmax(SoftmaxSteps[7], in); err == nil {
				return SoftmaxSteps[7]
			}
		}
		if in.Cols <= SplitRowsMaxCols && in.Rows >= 2*in.Device.SMs {
			return SoftmaxSteps[3]
		}
		return SoftmaxSteps[9]
	}
	if _, err := PlanSoftmax(SoftmaxSteps[10], in); err == nil {
		return SoftmaxSteps[10]
	}
	return SoftmaxSteps[9]
}

// onBuffers is a softmax problem over a caller's buffers: no host copy of x, so no reference.
func onBuffers(env *lab.Env, x, y *gpu.Buffer[float32], rows, cols int) *SoftmaxProblem {
	return &SoftmaxProblem{DType: F32, Rows: rows, Cols: cols, env: env, X: Tensor{DType: F32, F32: x}, Y: Tensor{DType: F32, F32: y}}
}

// SoftmaxLauncher returns a function that queues softmax over each row of the rows x cols float32
// x into y with the step PickSoftmax chooses, the step's name, a function that says whether the
// last run failed in a way only the GPU knows (step 11's team gave up waiting: it reads a flag
// back, so it waits for the run), and a function that frees what the launch keeps (step 9's pairs,
// step 11's mailbox). Shapes no step takes are refused before any launch.
func SoftmaxLauncher(env *lab.Env, x, y *gpu.Buffer[float32], rows, cols int) (run func() error, step string, verify func() error, free func(), err error) {
	if !env.GPU() {
		return nil, "", nil, nil, fmt.Errorf("softmax: running kernels needs a GPU (%s)", env.Mode)
	}
	if rows*cols > x.Len() || rows*cols > y.Len() {
		return nil, "", nil, nil, fmt.Errorf("softmax (%d, %d): x holds %d and y %d floats, %d needed", rows, cols, x.Len(), y.Len(), rows*cols)
	}
	p := onBuffers(env, x, y, rows, cols)
	s := PickSoftmax(p.Input())
	run, _, _, err = p.Launcher(s, "")
	if err != nil {
		p.Free()
		return nil, s.Name, nil, nil, err
	}
	return run, s.Name, p.RingFailed, p.Free, nil
}

// SoftmaxOp is softmax over the last dimension as an autograd.Function on the GPU, the counterpart
// of torch.softmax(x, dim=-1): one float32 input of any shape. The forward runs PickSoftmax's step,
// the backward s10_backward.cu (dx = y * (dy - sum(dy * y)) per row) from the forward's output. An
// input with no element launches nothing. Free releases what the op keeps for its backwards.
// Non-finite inputs give what torch.softmax gives, on every step: masked (-inf) entries of a row
// with a finite entry are exactly 0 in y and dx, and a row all -inf, or with a +inf or a NaN, is
// NaN in y and dx.
type SoftmaxOp struct {
	env *lab.Env
	// Poison fills every output with NaN before the kernels write it, so that the checks catch an
	// element left unwritten.
	Poison bool
	// Launches names the steps of the last forward and backward, for reports.
	Launches []string
	kept     []*SoftmaxProblem
}

// NewSoftmaxOp returns the op; it needs a GPU.
func NewSoftmaxOp(env *lab.Env) (*SoftmaxOp, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("softmax op: needs a GPU (%s)", env.Mode)
	}
	return &SoftmaxOp{env: env}, nil
}

// Name implements autograd.Function.
func (o *SoftmaxOp) Name() string { return "softmax over the last dim (GPU float32)" }

// Free releases the scratch buffers the op's launches kept.
func (o *SoftmaxOp) Free() {
	for _, p := range o.kept {
		p.Free()
	}
	o.kept = nil
}

// SoftmaxShape reads (rows, cols) from the op's input: cols is the last dimension, rows the
// product of the others.
func SoftmaxShape(in []*autograd.Tensor) (rows, cols int, err error) {
	if len(in) != 1 {
		return 0, 0, fmt.Errorf("softmax takes 1 input (x), got %d", len(in))
	}
	s := in[0].Shape
	if len(s) == 0 {
		return 0, 0, fmt.Errorf("softmax over the last dim: x is a scalar (shape []): it has no dimension to normalise")
	}
	rows, cols = 1, s[len(s)-1]
	for _, d := range s[:len(s)-1] {
		rows *= d
	}
	return rows, cols, nil
}

// fresh allocates an output of n floats, NaN-filled when the op poisons.
func (o *SoftmaxOp) fresh(n int) (*gpu.Buffer[float32], error) {
	return freshOutput(o.env, "softmax op", n, o.Poison)
}

// Forward implements autograd.Function.
func (o *SoftmaxOp) Forward(ctx *autograd.Context, in ...*autograd.Tensor) (*autograd.Tensor, error) {
	rows, cols, err := SoftmaxShape(in)
	if err != nil {
		return nil, err
	}
	o.Launches = nil
	if rows*cols == 0 {
		return autograd.New("y", []float64{}, in[0].Shape...), nil
	}
	x, err := in[0].Device(o.env.Session)
	if err != nil {
		return nil, err
	}
	y, err := o.fresh(rows * cols)
	if err != nil {
		return nil, err
	}
	p := onBuffers(o.env, x, y, rows, cols)
	s := PickSoftmax(p.Input())
	run, _, _, err := p.Launcher(s, "")
	if err == nil {
		err = run()
	}
	if err == nil {
		err = p.RingFailed() // reads one flag back (step 11 only): a team's only failure mode
	}
	if err != nil {
		p.Free()
		y.Free()
		return nil, fmt.Errorf("softmax op, step %s on (%d, %d): %w", s.Name, rows, cols, err)
	}
	o.kept = append(o.kept, p)
	o.Launches = append(o.Launches, s.Name)
	ctx.Set("y", y)
	return autograd.OnDevice("y", y, true, in[0].Shape...), nil
}

// Backward implements autograd.Function.
func (o *SoftmaxOp) Backward(ctx *autograd.Context, g *autograd.Tensor) ([]*autograd.Tensor, error) {
	rows, cols := 1, g.Shape[len(g.Shape)-1]
	for _, d := range g.Shape[:len(g.Shape)-1] {
		rows *= d
	}
	if rows*cols == 0 {
		return []*autograd.Tensor{autograd.New("dx", []float64{}, g.Shape...)}, nil
	}
	v, _ := ctx.Get("y")
	y, ok := v.(*gpu.Buffer[float32])
	if !ok {
		return nil, fmt.Errorf("softmax op: backward without its forward's output")
	}
	sess := o.env.Session
	uploaded := !g.OnGPU()
	dy, err := g.Device(sess)
	if err != nil {
		return nil, err
	}
	dx, err := o.fresh(rows * cols)
	if err != nil {
		return nil, err
	}
	run, err := o.backward(y, dy, dx, rows, cols)
	if err == nil {
		err = run()
	}
	if err == nil && uploaded {
		err = sess.Synchronize()
	}
	if err != nil {
		dx.Free()
		return nil, fmt.Errorf("softmax op backward on (%d, %d): %w", rows, cols, err)
	}
	if uploaded {
		g.Free()
	}
	o.Launches = append(o.Launches, "s10_backward.cu")
	return []*autograd.Tensor{autograd.OnDevice("dx", dx, true, g.Shape...)}, nil
}

// backward returns a function that queues the two backward kernels on step 9's layout.
func (o *SoftmaxOp) backward(y, dy, dx *gpu.Buffer[float32], rows, cols int) (func() error, error) {
	same := y.DevicePtr()%16 == dy.DevicePtr()%16 && y.DevicePtr()%16 == dx.DevicePtr()%16
	plan := PlanSplit(SoftmaxInput{DType: F32, Rows: rows, Cols: cols, SameOffset: same, Device: o.env.Session.Device}, "softmax_bwd_dot", "softmax_bwd_dx")
	src, err := kr.Source("s10_backward.cu")
	if err != nil {
		return nil, err
	}
	prog, err := o.env.BuildWith(src, compile.Options{}, plan.Kernel, plan.Second)
	if err != nil {
		return nil, err
	}
	dot, err := prog.Kernel(plan.Kernel)
	if err != nil {
		return nil, err
	}
	write, err := prog.Kernel(plan.Second)
	if err != nil {
		return nil, err
	}
	p := onBuffers(o.env, y, dx, rows, cols) // keeps the partial sums until Free
	part, err := p.scratch(rows * plan.Chunks)
	if err != nil {
		return nil, err
	}
	o.kept = append(o.kept, p)
	cfg := gpu.Config{Grid: gpu.D1(plan.Grid), Block: gpu.D1(plan.Block)}
	shape := []any{int32(rows), int32(cols), int32(plan.Chunks), int32(plan.Chunk4), plan.Vec}
	return func() error {
		if err := dot.Launch(cfg, append([]any{y, dy, part}, shape...)...); err != nil {
			return err
		}
		return write.Launch(cfg, append([]any{y, dy, part, dx}, shape...)...)
	}, nil
}

// SoftmaxBackwardRow is the float64 backward of one row: dx = y * (dy - sum(dy * y)), with y the
// row's exact softmax (SoftmaxRow).
func SoftmaxBackwardRow(y []float64, dy []float32) []float64 {
	dot := 0.0
	for i, v := range y {
		dot += v * float64(dy[i])
	}
	dx := make([]float64, len(y))
	for i, v := range y {
		dx[i] = v * (float64(dy[i]) - dot)
	}
	return dx
}

// SoftmaxOpResult is the GPU op run forward and backward at one shape, against the float64
// softmax and its backward.
type SoftmaxOpResult struct {
	Shape    []int
	Offset   int
	Y, DX    check.Result
	Launches []string
}

// OK says both passed.
func (r SoftmaxOpResult) OK() bool { return r.Y.OK && r.DX.OK }

// String is a short report.
func (r SoftmaxOpResult) String() string {
	return fmt.Sprintf("%v (offset %d, %v): y %v; dx %v", r.Shape, r.Offset, r.Launches, r.Y, r.DX)
}

// SoftmaxBackwardTolerance is the bound of the backward: check.FP32, with an absolute floor for
// the elements whose exact dx is near 0 although y and dy are not: their float32 error is that of
// the difference dy - dot, about 2^-24 (|dy| + |dot|) y. y is the exact softmax of every row.
func SoftmaxBackwardTolerance(y []float64, dy []float32) check.Tolerance {
	t := check.FP32
	worst := 0.0
	for i, v := range y {
		if !math.IsNaN(v) { // a NaN row (PyTorch's for -inf, +inf or NaN rows) is compared as NaN
			worst = max(worst, v*(math.Abs(float64(dy[i]))+1))
		}
	}
	t.Floor = worst * 0x1p-22
	t.Name = "fp32 + floor"
	return t
}

// SoftmaxOpCheck runs the op through a tape on x of the given shape (uniform in [-4, 4)) and
// upstream gradient dy (uniform in [-1, 1)), x placed offset floats into its buffer (1: a view off
// 16 bytes), and compares y and dx with the float64 references on every element.
func SoftmaxOpCheck(env *lab.Env, shape []int, offset int, seed uint64) (SoftmaxOpResult, error) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return SoftmaxOpCheckOn(env, Uniform(F32, n, -4, 4, seed), Uniform(F32, n, -1, 1, seed+1), shape, offset)
}

// SoftmaxOpCheckOn is SoftmaxOpCheck on the given x and dy (any values: -inf, +inf and NaN
// included). The float64 references follow PyTorch: a row with a finite maximum and no NaN or
// +inf is exact (its -inf entries give 0); every other row is NaN in y and in dx, and a NaN where
// the reference has one passes.
func SoftmaxOpCheckOn(env *lab.Env, xs, dys []float32, shape []int, offset int) (SoftmaxOpResult, error) {
	res := SoftmaxOpResult{Shape: shape, Offset: offset}
	op, err := NewSoftmaxOp(env)
	if err != nil {
		return res, err
	}
	op.Poison = true
	defer op.Free()
	n := len(xs)
	x := autograd.Param("x", []float64{}, shape...) // no element: nothing reaches the GPU
	if n > 0 {
		whole, err := gpu.Alloc[float32](env.Session, n+offset)
		if err != nil {
			return res, err
		}
		defer whole.Free()
		view, err := whole.View(offset, n)
		if err != nil {
			return res, err
		}
		if err := view.CopyFromHost(xs); err != nil {
			return res, err
		}
		x = autograd.OnDevice("x", view, false, shape...)
		x.RequiresGrad = true
	}
	tp := autograd.NewTape()
	defer tp.Free()
	y, err := tp.Apply(op, x)
	if err != nil {
		return res, err
	}
	if err := tp.BackwardWith(y, autograd.New("dy", check.Float64s(dys), shape...)); err != nil {
		return res, err
	}
	defer x.Grad.Free()
	res.Launches = op.Launches
	gy, err := y.Values()
	if err != nil {
		return res, err
	}
	gdx, err := x.Grad.Values()
	if err != nil {
		return res, err
	}
	cols := shape[len(shape)-1]
	var wy, wdx []float64
	for r := 0; cols > 0 && r < n/cols; r++ {
		y := SoftmaxRow(xs[r*cols : (r+1)*cols])
		wy = append(wy, y...)
		wdx = append(wdx, SoftmaxBackwardRow(y, dys[r*cols:(r+1)*cols])...)
	}
	res.Y = check.Compare(gy, wy, check.FP32)
	res.DX = check.Compare(gdx, wdx, SoftmaxBackwardTolerance(wy, dys))
	return res, nil
}

// SoftmaxGradLoss is the loss of the gradient checks: sum(tanh(4 softmax(x))^2), so that dL/dy
// differs from element to element.
func SoftmaxGradLoss(tp *autograd.Tape, op autograd.Function, x *autograd.Tensor) (*autograd.Tensor, error) {
	y, err := tp.Apply(op, x)
	if err != nil {
		return nil, err
	}
	return autograd.Chain(tp, y, autograd.Scale(4), autograd.Tanh, autograd.Square, autograd.Sum)
}

// SoftmaxGradCheckGPU proves the op's backward against central finite differences of
// SoftmaxGradLoss through the float32 kernels, on at most maxPerInput elements of x (0: all).
func SoftmaxGradCheckGPU(env *lab.Env, shape []int, seed uint64, maxPerInput int) (autograd.GradCheckResult, []string, error) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return SoftmaxGradCheckGPUOn(env, check.Float64s(Uniform(F32, n, -2, 2, seed)), shape, seed, maxPerInput)
}

// SoftmaxGradCheckGPUOn is SoftmaxGradCheckGPU at x (-inf entries allowed: moved by a finite step
// they stay -inf, and both derivatives are 0 there).
func SoftmaxGradCheckGPUOn(env *lab.Env, xs []float64, shape []int, seed uint64, maxPerInput int) (autograd.GradCheckResult, []string, error) {
	op, err := NewSoftmaxOp(env)
	if err != nil {
		return autograd.GradCheckResult{}, nil, err
	}
	defer op.Free()
	x := autograd.Param("x", xs, shape...)
	opts := autograd.Float32Check
	opts.MaxPerInput, opts.Seed = maxPerInput, seed
	var launches []string
	res, err := autograd.GradCheck(func(tp *autograd.Tape, in []*autograd.Tensor) (*autograd.Tensor, error) {
		l, err := SoftmaxGradLoss(tp, op, in[0])
		if launches == nil {
			launches = append([]string(nil), op.Launches...)
		}
		return l, err
	}, []*autograd.Tensor{x}, opts)
	return res, launches, err
}

// softmaxOpShapes are the shapes the notebook's op cell and the tests run: each path of the
// dispatch on an H100 (step 6 for short rows, step 8 up to ClusterMaxCols, step 11 past it, step 9
// past what step 11 holds), lengths off every multiple of 4, a 3-d x, views off 16 bytes, and no
// element at all.
var softmaxOpShapes = []struct {
	Shape  []int
	Offset int
}{{[]int{4, 8, 768}, 0}, {[]int{3, 1001}, 1}, {[]int{6, 4099}, 0}, {[]int{2, 3, 50257}, 3}, {[]int{2, 1000003}, 1}, {[]int{1, 1500001}, 0}, {[]int{1, 4000003}, 0}, {[]int{0, 16}, 0}}

// ShowSoftmaxOp runs the GPU op forward and backward on shapes that take every path of its
// dispatch, compares y and dx with the float64 references, and runs the finite-difference gradient
// check on a small shape. In the no-GPU mode it shows which step the op would pick for each shape
// on the recorded GPU.
func ShowSoftmaxOp(env *lab.Env) error {
	if !env.GPU() {
		dev := env.Device() // the recorded GPU, or the profile the env emulates
		t := show.Table{Title: "Which forward step the softmax op picks on " + dev.Name + " (running it needs a GPU)",
			Header: []string{"x shape", "(rows, cols)", "forward step"}}
		for _, c := range softmaxOpShapes {
			rows, cols, err := SoftmaxShape([]*autograd.Tensor{autograd.New("x", nil, c.Shape...)})
			if err != nil {
				return err
			}
			step := "none: no element, nothing to launch"
			if rows*cols > 0 {
				step = PickSoftmax(SoftmaxInput{DType: F32, Rows: rows, Cols: cols, Aligned: c.Offset%4 == 0, SameOffset: true, Device: dev}).Name
			}
			t.Rows = append(t.Rows, []string{fmt.Sprint(c.Shape), fmt.Sprintf("(%d, %d)", rows, cols), step})
		}
		t.Display()
		return nil
	}
	t := show.Table{Title: "The softmax op on any shape: y and dx against the float64 references",
		Header: []string{"x shape", "view offset", "kernels", "y rel L2", "dx rel L2", "verdict"}}
	for i, c := range softmaxOpShapes {
		r, err := SoftmaxOpCheck(env, c.Shape, c.Offset, uint64(950+i))
		if err != nil {
			return err
		}
		verdict := "PASS"
		if !r.OK() {
			verdict = "FAIL"
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(c.Shape), fmt.Sprint(c.Offset), fmt.Sprint(r.Launches), fmt.Sprintf("%.2g", r.Y.RelL2), fmt.Sprintf("%.2g", r.DX.RelL2), verdict})
	}
	t.Caption = "y at check.FP32; dx at check.FP32 with a floor of 2^-22 max(y (|dy| + 1)) for the elements whose exact dx is near 0. Every output starts as NaN."
	t.Display()
	res, launches, err := SoftmaxGradCheckGPU(env, []int{3, 2, 37}, 7, 0)
	if err != nil {
		return err
	}
	kind := show.Success
	if !res.OK {
		kind = show.Warning
	}
	show.Note(kind, fmt.Sprintf("finite-difference gradient check through the GPU kernels (%v), x (3, 2, 37), every element: %s", launches, res))
	return nil
}

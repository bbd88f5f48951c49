package reduce

import (
	"fmt"
	"slices"

	"github.com/cudalessons/cudalessons/helpers/autograd"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// LayerNormOp is layer norm as an autograd.Function on the GPU, the counterpart of
// torch.nn.functional.layer_norm with weight and bias: inputs x (..., normalised dims), weight and
// bias (the normalised dims); Dims says how many trailing dimensions of x are normalised. It takes
// ANY valid shape: the forward runs ForwardStep (step 5 where a sample fits in one block, step 6
// where it fits in all SMs, step 4 where float4 applies, step 3 otherwise) and the backward runs l7_backward.cu (float4 or single floats).
// No sample (a leading dimension of 0) launches nothing. Tensors are float32 on the device; host
// inputs are uploaded on first use. Free releases the statistics the op keeps for its backward.
// Constant samples give the bias. It is exact over float32's range: a sample whose squared
// deviations overflow float32 (deviations from its mean beyond about 1.8e19) takes the kernels' slow
// path, its variance summed again rescaled by 2^-80 (layer norm is scale-invariant apart from eps,
// negligible there). A sample with an inf or NaN entry comes out NaN in y and dx as in PyTorch;
// one whose sum overflows float32 (|x| M past 3.4e38) comes out non-finite, never silently the bias.
type LayerNormOp struct {
	env  *lab.Env
	Dims int
	// Poison fills every output with NaN before the kernels write it, so that the checks catch an
	// element left unwritten.
	Poison bool
	// Launches names the steps of the last forward and backward, for reports.
	Launches []string
	kept     []*LNProblem // the statistics and scratch of each forward, for its backward
}

// fresh allocates an output of n floats, NaN-filled when the op poisons.
func (o *LayerNormOp) fresh(n int) (*gpu.Buffer[float32], error) {
	return freshOutput(o.env, "layer norm op", n, o.Poison)
}

// freshOutput allocates an output of n floats for an op, NaN-filled when poison is set so that a
// check catches any element the kernels leave unwritten.
func freshOutput(env *lab.Env, op string, n int, poison bool) (*gpu.Buffer[float32], error) {
	b, err := gpu.Alloc[float32](env.Session, n)
	if err != nil {
		return nil, fmt.Errorf("%s: allocating an output of %d floats: %w", op, n, err)
	}
	if poison {
		if err := b.Poison(); err != nil {
			b.Free()
			return nil, err
		}
	}
	return b, nil
}

// NewLayerNormOp returns the op normalising the last dims dimensions; it needs a GPU.
func NewLayerNormOp(env *lab.Env, dims int) (*LayerNormOp, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("layer norm op: needs a GPU (%s)", env.Mode)
	}
	if dims < 1 {
		return nil, fmt.Errorf("layer norm op: it normalises %d dimensions: at least one", dims)
	}
	return &LayerNormOp{env: env, Dims: dims}, nil
}

// Name implements autograd.Function.
func (o *LayerNormOp) Name() string {
	return fmt.Sprintf("layer norm over %d dims (GPU float32)", o.Dims)
}

// Free releases the buffers the op allocated for its backward (mean, rstd, partials).
func (o *LayerNormOp) Free() {
	for _, p := range o.kept {
		p.Free()
	}
	o.kept = nil
}

// LNShape reads (N, M) from layer norm's inputs x, weight and bias, normalising the last dims
// dimensions of x, and refuses anything else before any launch.
func LNShape(dims int, in []*autograd.Tensor) (N, M int, err error) {
	if len(in) != 3 {
		return 0, 0, fmt.Errorf("layer norm takes 3 inputs (x, weight, bias), got %d", len(in))
	}
	xs := in[0].Shape
	if len(xs) < dims {
		return 0, 0, fmt.Errorf("layer norm over %d dims: x has shape %v, only %d dims", dims, xs, len(xs))
	}
	lead, norm := xs[:len(xs)-dims], xs[len(xs)-dims:]
	for i, t := range in[1:] {
		if !slices.Equal(t.Shape, norm) {
			return 0, 0, fmt.Errorf("layer norm: %s has shape %v, want the normalised dims %v of x %v", []string{"weight", "bias"}[i], t.Shape, norm, xs)
		}
	}
	N, M = 1, 1
	for _, d := range lead {
		N *= d
	}
	for _, d := range norm {
		M *= d
	}
	if M < 1 {
		return N, M, fmt.Errorf("layer norm: the normalised dims %v hold no element: the mean of nothing is undefined", norm)
	}
	return N, M, nil
}

// problem is an LNProblem over the op's buffers (no host copies: the checks are the op's own),
// with its statistics and scratch, kept until Free.
func (o *LayerNormOp) problem(N, M int, x, w, b *gpu.Buffer[float32]) (*LNProblem, error) {
	p := &LNProblem{N: N, M: M, X: x, W: w, B: b, env: o.env}
	if err := p.allocScratch(); err != nil {
		return nil, fmt.Errorf("layer norm op: %w", err)
	}
	o.kept = append(o.kept, p)
	return p, nil
}

// Forward implements autograd.Function.
func (o *LayerNormOp) Forward(ctx *autograd.Context, in ...*autograd.Tensor) (*autograd.Tensor, error) {
	N, M, err := LNShape(o.Dims, in)
	if err != nil {
		return nil, err
	}
	o.Launches = nil
	ctx.SaveForBackward(in...)
	if N == 0 {
		return autograd.New("y", []float64{}, in[0].Shape...), nil
	}
	sess := o.env.Session
	var bufs [3]*gpu.Buffer[float32]
	for i, t := range in {
		if bufs[i], err = t.Device(sess); err != nil {
			return nil, err
		}
	}
	p, err := o.problem(N, M, bufs[0], bufs[1], bufs[2])
	if err != nil {
		return nil, err
	}
	if p.Y, err = o.fresh(N * M); err != nil {
		return nil, err
	}
	step := p.forwardStep()
	run, _, err := p.Launcher(step, "")
	if err == nil {
		err = run()
	}
	if err == nil && step.Name == LNSteps[5].Name {
		err = p.barrierFailed() // reads one flag back: the grid barrier's only failure mode
	}
	if err != nil {
		p.Y.Free()
		return nil, fmt.Errorf("layer norm op, %s on (%d, %d): %w", step.Name, N, M, err)
	}
	o.Launches = append(o.Launches, step.Name)
	ctx.Set("problem", p)
	return autograd.OnDevice("y", p.Y, true, in[0].Shape...), nil
}

// Backward implements autograd.Function: dx, dweight and dbias from one run of the backward
// kernels (they come together); the ones no input needs are freed.
func (o *LayerNormOp) Backward(ctx *autograd.Context, g *autograd.Tensor) ([]*autograd.Tensor, error) {
	sv := ctx.Saved()
	N, M, _ := LNShape(o.Dims, sv)
	grads := make([]*autograd.Tensor, 3)
	if N == 0 {
		for i, t := range sv {
			if ctx.NeedsGrad(i) {
				grads[i] = autograd.New("d"+t.Name, make([]float64, t.Len()), t.Shape...)
			}
		}
		return grads, nil
	}
	v, _ := ctx.Get("problem")
	fwd, ok := v.(*LNProblem)
	if !ok {
		return nil, fmt.Errorf("layer norm op: backward without its forward's statistics")
	}
	sess := o.env.Session
	uploaded := !g.OnGPU()
	gd, err := g.Device(sess)
	if err != nil {
		return nil, err
	}
	p := *fwd
	p.DY = gd
	var outs [3]*gpu.Buffer[float32]
	fail := func(err error) ([]*autograd.Tensor, error) {
		for _, b := range outs {
			if b != nil {
				b.Free()
			}
		}
		return nil, err
	}
	for i, n := range []int{N * M, M, M} {
		if outs[i], err = o.fresh(n); err != nil {
			return fail(err)
		}
	}
	p.DX, p.DW, p.DB = outs[0], outs[1], outs[2]
	run, _, err := p.BackwardLauncher("")
	if err == nil {
		err = run()
	}
	if err == nil && uploaded {
		err = sess.Synchronize()
	}
	if err != nil {
		return fail(fmt.Errorf("layer norm op backward on (%d, %d): %w", N, M, err))
	}
	if uploaded {
		g.Free()
	}
	o.Launches = append(o.Launches, "l7_backward.cu")
	for i, t := range sv {
		if ctx.NeedsGrad(i) {
			grads[i] = autograd.OnDevice("d"+t.Name, outs[i], true, t.Shape...)
		} else {
			outs[i].Free()
		}
	}
	return grads, nil
}

// LNGradLoss is the loss of the gradient checks: sum(tanh(y)^2), so that dL/dy differs from
// element to element.
func LNGradLoss(tp *autograd.Tape, op autograd.Function, x, w, b *autograd.Tensor) (*autograd.Tensor, error) {
	y, err := tp.Apply(op, x, w, b)
	if err != nil {
		return nil, err
	}
	return autograd.Chain(tp, y, autograd.Tanh, autograd.Square, autograd.Sum)
}

// LNOpInputs draws x (shape), weight and bias (the last dims of shape) as parameters.
func LNOpInputs(shape []int, dims int, seed uint64) (x, w, b *autograd.Tensor) {
	N, M := 1, 1
	for i, d := range shape {
		if i < len(shape)-dims {
			N *= d
		} else {
			M *= d
		}
	}
	norm := shape[len(shape)-dims:]
	return autograd.Param("x", check.Float64s(Uniform(F32, N*M, -1, 1, seed)), shape...),
		autograd.Param("weight", check.Float64s(Uniform(F32, M, 0.5, 1.5, seed+1)), norm...),
		autograd.Param("bias", check.Float64s(Uniform(F32, M, -0.5, 0.5, seed+2)), norm...)
}

// LNGradCheckGPU proves the GPU op's backward (dx, dweight, dbias) against central finite
// differences of LNGradLoss through the float32 kernels (autograd.Float32Check), on at most
// maxPerInput elements of each input (0: all).
func LNGradCheckGPU(env *lab.Env, shape []int, dims int, seed uint64, maxPerInput int) (autograd.GradCheckResult, []string, error) {
	op, err := NewLayerNormOp(env, dims)
	if err != nil {
		return autograd.GradCheckResult{}, nil, err
	}
	defer op.Free()
	x, w, b := LNOpInputs(shape, dims, seed)
	opts := autograd.Float32Check
	opts.MaxPerInput, opts.Seed = maxPerInput, seed
	var launches []string
	res, err := autograd.GradCheck(func(tp *autograd.Tape, in []*autograd.Tensor) (*autograd.Tensor, error) {
		l, err := LNGradLoss(tp, op, in[0], in[1], in[2])
		if launches == nil {
			launches = append([]string(nil), op.Launches...)
		}
		return l, err
	}, []*autograd.Tensor{x, w, b}, opts)
	return res, launches, err
}

// LNOpResult is the GPU op run forward and backward through a tape at one shape, compared with the
// float64 layer norm and its backward.
type LNOpResult struct {
	Shape         []int
	Dims          int
	Y, DX, DW, DB check.Result
	Launches      []string
}

// OK says all four passed.
func (r LNOpResult) OK() bool { return r.Y.OK && r.DX.OK && r.DW.OK && r.DB.OK }

// String is a short report.
func (r LNOpResult) String() string {
	return fmt.Sprintf("%v over %d dims (%v): y %v; dx %v; dweight %v; dbias %v", r.Shape, r.Dims, r.Launches, r.Y, r.DX, r.DW, r.DB)
}

// LNOpCheck runs the GPU op through a tape on x of the given shape with upstream gradient dy (both
// uniform in [-1, 1)) and compares y, dx, dweight and dbias with the float64 references at
// check.FP32 (the gradients with LNBackwardTolerance's floor for zero references), every element.
func LNOpCheck(env *lab.Env, shape []int, dims int, seed uint64) (LNOpResult, error) {
	return LNOpCheckOn(env, nil, shape, dims, seed)
}

// LNOpCheckOn is LNOpCheck with x's values given (nil: LNOpInputs's uniform ones); weight, bias
// and dy are LNOpCheck's.
func LNOpCheckOn(env *lab.Env, xs []float32, shape []int, dims int, seed uint64) (LNOpResult, error) {
	res := LNOpResult{Shape: shape, Dims: dims}
	run, err := lnOpRun(env, xs, nil, shape, dims, seed)
	if err != nil {
		return res, err
	}
	res.Launches = run.Launches
	N, M := run.N, run.M
	var want []float64
	for n := 0; n < N; n++ {
		yn, _, _ := LayerNormSample(run.X[n*M:(n+1)*M], run.W, run.B, LNEps)
		want = append(want, yn...)
	}
	dx, dw, db := LayerNormBackward(run.X, run.W, run.DY, N, M, LNEps)
	res.Y = check.Compare(run.Got[0], want, check.FP32)
	btol := LNBackwardTolerance(run.X, run.W, run.DY, N, M)
	res.DX = check.Compare(run.Got[1], dx, btol)
	res.DW = check.Compare(run.Got[2], dw, btol)
	res.DB = check.Compare(run.Got[3], db, btol)
	return res, nil
}

// lnOpRunResult is one forward and backward of the op through a tape: its inputs as float32
// (N samples of M) and its outputs y, dx, dweight, dbias, read back.
type lnOpRunResult struct {
	N, M        int
	X, W, B, DY []float32
	Got         [4][]float64
	Launches    []string
}

// lnOpRun runs the GPU op (poisoned outputs) through a tape on x (xs, or LNOpInputs's uniform
// values when nil) with LNOpInputs's weight and bias, and the backward with dy (dys, or uniform in
// [-1, 1) when nil), and reads y and the three gradients back.
func lnOpRun(env *lab.Env, xs, dys []float32, shape []int, dims int, seed uint64) (lnOpRunResult, error) {
	var res lnOpRunResult
	op, err := NewLayerNormOp(env, dims)
	if err != nil {
		return res, err
	}
	op.Poison = true
	defer op.Free()
	x, w, b := LNOpInputs(shape, dims, seed)
	if xs != nil {
		if len(xs) != x.Len() {
			return res, fmt.Errorf("layer norm check: %d values for x of shape %v", len(xs), shape)
		}
		x = autograd.Param("x", check.Float64s(xs), shape...)
	}
	N, M, err := LNShape(dims, []*autograd.Tensor{x, w, b})
	if err != nil {
		return res, err
	}
	res.N, res.M = N, M
	res.DY = dys
	if dys == nil {
		res.DY = Uniform(F32, N*M, -1, 1, seed+3)
	} else if len(dys) != N*M {
		return res, fmt.Errorf("layer norm check: %d values for dy of shape %v", len(dys), shape)
	}
	tp := autograd.NewTape()
	defer tp.Free()
	y, err := tp.Apply(op, x, w, b)
	if err != nil {
		return res, err
	}
	if err := tp.BackwardWith(y, autograd.New("dy", check.Float64s(res.DY), shape...)); err != nil {
		return res, err
	}
	res.Launches = op.Launches
	for _, t := range []*autograd.Tensor{x, w, b} {
		defer t.Grad.Free()
		defer t.Free()
	}
	for i, t := range []*autograd.Tensor{y, x.Grad, w.Grad, b.Grad} {
		if res.Got[i], err = t.Values(); err != nil {
			return res, err
		}
	}
	f32 := func(t *autograd.Tensor) []float32 {
		v, _ := t.Values()
		out := make([]float32, len(v))
		for i := range v {
			out[i] = float32(v[i])
		}
		return out
	}
	res.X, res.W, res.B = f32(x), f32(w), f32(b)
	return res, nil
}

// opShapes are the shapes the notebook's op cell runs: one per dispatch path on an H100 (step 5's
// warp and block kernels, step 6, step 4 past step 6's limit, step 3 for single floats), a 3-d x
// normalised over two dims, and no sample at all.
var opShapes = []struct {
	Shape []int
	Dims  int
}{{[]int{4, 8, 768}, 1}, {[]int{3, 1001}, 1}, {[]int{6, 40, 100}, 2}, {[]int{2, 65536 + 4}, 1}, {[]int{1, 8000000}, 1}, {[]int{3, 65537}, 1}, {[]int{2, 4, 3}, 2}, {[]int{0, 16}, 1}}

// ShowLayerNormOp runs the GPU op forward and backward on shapes that take every path of its
// dispatch, compares y, dx, dweight and dbias with the float64 references, and runs the
// finite-difference gradient check on a small shape. In the no-GPU mode it shows which step the
// op would pick for each shape on the recorded GPU.
func ShowLayerNormOp(env *lab.Env) error {
	t := show.Table{Title: "The layer norm op on any shape: y, dx, dweight, dbias against the float64 references (check.FP32)",
		Header: []string{"x shape", "dims", "kernels", "y", "dx", "dweight", "dbias", "verdict"}}
	if !env.GPU() {
		run, err := env.Recorded(ID)
		if err != nil {
			return env.NoRecording(err)
		}
		_ = run
		dev := env.Device() // the recorded GPU, or the profile the env emulates
		t.Title = "Which forward step the layer norm op picks on " + dev.Name + " (running it needs a GPU)"
		t.Header = []string{"x shape", "dims", "(N, M)", "forward step"}
		for _, c := range opShapes {
			x, w, b := LNOpInputs(c.Shape, c.Dims, 1)
			N, M, err := LNShape(c.Dims, []*autograd.Tensor{x, w, b})
			if err != nil {
				return err
			}
			step := ForwardStep(dev, N, M, true).Name
			if N == 0 {
				step = "none: no sample, nothing to launch"
			}
			t.Rows = append(t.Rows, []string{fmt.Sprint(c.Shape), fmt.Sprint(c.Dims), fmt.Sprintf("(%d, %d)", N, M), step})
		}
		t.Display()
		return nil
	}
	for i, c := range opShapes {
		r, err := LNOpCheck(env, c.Shape, c.Dims, uint64(900+i))
		if err != nil {
			return err
		}
		verdict := "PASS"
		if !r.OK() {
			verdict = "FAIL"
		}
		rel := func(c check.Result) string { return fmt.Sprintf("%.2g", c.RelL2) }
		t.Rows = append(t.Rows, []string{fmt.Sprint(c.Shape), fmt.Sprint(c.Dims), fmt.Sprint(r.Launches), rel(r.Y), rel(r.DX), rel(r.DW), rel(r.DB), verdict})
	}
	t.Display()
	res, launches, err := LNGradCheckGPU(env, []int{3, 2, 6}, 2, 7, 0)
	if err != nil {
		return err
	}
	kind := show.Success
	if !res.OK {
		kind = show.Warning
	}
	show.Note(kind, fmt.Sprintf("finite-difference gradient check through the GPU kernels (%v), x (3, 2, 6) over 2 dims, every element of x, weight and bias: %s", launches, res))
	return nil
}

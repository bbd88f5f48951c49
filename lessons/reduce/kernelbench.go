package reduce

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
)

// LayerNormOn is the layer norm forward over device buffers its caller owns and fills (how
// lessons/kernelbench runs KernelBench's layer norm on its own inputs): N samples of M in x, the
// weight and bias of M, the output y. It runs ForwardStep, the step the autograd op runs, and keeps
// the statistics and scratch that step needs until Free. Run queues one forward.
type LayerNormOn struct {
	// Step is the forward step that runs.
	Step string
	// Run queues one forward (for step 6, the zeroing of its barrier's counters first).
	Run func() error
	p   *LNProblem
}

// NewLayerNormOn plans and compiles the forward for x (N x M), w, b (M) and y (N x M); a shape no
// step takes is refused before any launch. It allocates the step's scratch (mean, rstd, partials,
// the barrier's counters); the four buffers stay the caller's.
func NewLayerNormOn(env *lab.Env, x, w, b, y *gpu.Buffer[float32], N, M int) (*LayerNormOn, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("layer norm: running kernels needs a GPU (%s)", env.Mode)
	}
	if N < 1 || M < 1 {
		return nil, fmt.Errorf("layer norm: (%d, %d): at least one sample of at least one element", N, M)
	}
	for _, c := range []struct {
		name string
		buf  *gpu.Buffer[float32]
		n    int
	}{{"x", x, N * M}, {"weight", w, M}, {"bias", b, M}, {"y", y, N * M}} {
		if c.buf == nil || c.buf.Len() != c.n {
			return nil, fmt.Errorf("layer norm (%d, %d): %s must hold %d floats", N, M, c.name, c.n)
		}
	}
	p := &LNProblem{N: N, M: M, X: x, W: w, B: b, Y: y, env: env}
	if err := p.allocScratch(); err != nil {
		return nil, fmt.Errorf("layer norm (%d, %d): %w", N, M, err)
	}
	step := p.forwardStep()
	run, _, err := p.Launcher(step, "")
	if err != nil {
		p.Free()
		return nil, fmt.Errorf("layer norm (%d, %d), %s: %w", N, M, step.Name, err)
	}
	return &LayerNormOn{Step: step.Name, Run: run, p: p}, nil
}

// LayerNormScratchBytes is the device memory NewLayerNormOn allocates on d beside the caller's
// buffers: the floats of scratchLens and N+1 counters.
func LayerNormScratchBytes(d gpu.DeviceInfo, N, M int) int64 {
	floats := 0
	for _, n := range scratchLens(d, N, M) {
		floats += n
	}
	return 4*int64(floats) + 4*int64(N+1)
}

// Verify says whether the last run gave up at step 6's grid barrier (it reads one flag back, so it
// waits for the run); nil for the other steps.
func (l *LayerNormOn) Verify() error {
	if l.Step != LNSteps[5].Name {
		return nil
	}
	return l.p.barrierFailed()
}

// Free releases the scratch; the caller's buffers stay.
func (l *LayerNormOn) Free() { l.p.Free() }

// CountNonFinite counts the NaN and Inf among the first n floats of b on the GPU (util.cu's
// count_nonfinite_f32): how a check finds an output element left unwritten in a NaN-poisoned
// buffer too large to copy back.
func CountNonFinite(env *lab.Env, b *gpu.Buffer[float32], n int) (int64, error) {
	if !env.GPU() {
		return 0, fmt.Errorf("counting non-finite values needs a GPU (%s)", env.Mode)
	}
	if n < 0 || n > b.Len() {
		return 0, fmt.Errorf("counting non-finite values: %d of a buffer of %d", n, b.Len())
	}
	c, err := nonFinite(env, Tensor{DType: F32, F32: b}, n)
	return int64(c), err
}

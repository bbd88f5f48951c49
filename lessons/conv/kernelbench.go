package conv

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
)

// NewProblemOn is a Problem over device buffers its caller owns and fills (how lessons/kernelbench
// runs KernelBench's convolutions on its own inputs): x (N, C, H, W), the filters w (K, C, R, R),
// the bias (K values; zeros for a conv without one) and the conv output y (N, K, OH, OW). Launcher
// and Args run the steps on them; Free leaves them to the caller. In stays empty and Check has no
// reference: the caller checks the output itself. The fused steps' pooled output is allocated on
// first use, as in NewProblem.
func NewProblemOn(env *lab.Env, s Shape, x, w, b, y *gpu.Buffer[float32]) (*Problem, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("conv: running kernels needs a GPU (%s)", env.Mode)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	p := &Problem{Shape: s, env: env, refs: map[string][]float64{}}
	for _, c := range []struct {
		name string
		buf  *gpu.Buffer[float32]
		n    int
		dst  **gpu.Buffer[float32]
	}{{"x", x, s.XLen(), &p.x}, {"w", w, s.WLen(), &p.w}, {"bias", b, s.K, &p.b}, {"y", y, s.YLen(), &p.y}} {
		if c.buf == nil || c.buf.Len() != c.n {
			return nil, fmt.Errorf("conv %v: %s must hold %d floats", s, c.name, c.n)
		}
		v, err := c.buf.View(0, c.n) // a view: Free leaves the caller's buffer alone
		if err != nil {
			return nil, err
		}
		*c.dst = v
	}
	return p, nil
}

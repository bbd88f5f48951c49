package hostile

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons/conv"
)

func convShape(sh Shape) conv.Shape {
	d := sh.Dims
	return conv.Shape{N: d[0], C: d[1], H: d[2], W: d[3], K: d[4], R: d[5], S: d[6], P: d[7]}
}

// convOp is lesson 05's conv on a reader's tensors: conv.NewProblemOn over their buffers, run with
// conv.FastestStep's float32 step (what lessons/kernelbench runs for KernelBench's convolutions).
func convOp() *Op {
	return &Op{
		Name: "conv2d", Lesson: "05",
		Call:    "conv.NewProblemOn(env, shape, x, w, bias, y) on device buffers, Launcher(conv.FastestStep(shape, dev, conv.F32))",
		Dims:    "(N, C, H, W, K, R, S, P): x N x C x H x W, w K x C x R x R, stride S, padding P",
		Paths:   []string{conv.MustStep("3 implicit GEMM").Name},
		Outputs: []string{"y"},
		Shapes: []Shape{
			{Dims: []int{1, 1, 1, 1, 1, 1, 1, 0}, Note: "one pixel, one channel, a 1 x 1 filter", Short: true},
			{Dims: []int{2, 3, 32, 32, 8, 3, 1, 1}, Note: "a small 3 x 3 layer", Short: true},
			{Dims: []int{3, 5, 17, 13, 7, 5, 2, 0}, Note: "odd sizes, stride 2, no padding"},
			{Dims: []int{2, 3, 224, 224, 96, 11, 4, 2}, Note: "the article's AlexNet layer, batch 2"},
			{Dims: []int{1, 64, 28, 28, 64, 3, 1, 1}, Plain: []string{"w"}, Note: "576 taps, the weights at 1"},
		},
		Inputs: func(sh Shape, d Dist, seed uint64) []Input {
			s := convShape(sh)
			return []Input{draw(sh, d, "x", []int{s.N, s.C, s.H, s.W}, seed), draw(sh, d, "w", []int{s.K, s.C, s.R, s.R}, seed+1),
				uniformIn("bias", []int{s.K}, -0.5, 0.5, seed+2)}
		},
		Predict: func(dev gpu.DeviceInfo, sh Shape, _ []Input) string {
			st, ok := conv.FastestStep(convShape(sh), dev, conv.F32)
			if !ok {
				return "refused: no float32 step takes it"
			}
			return st.Name
		},
		Run: func(env *lab.Env, sh Shape, in []Input) (map[string][]float32, string, error) {
			s := convShape(sh)
			st, ok := conv.FastestStep(s, env.Session.Device, conv.F32)
			if !ok {
				return nil, "", fmt.Errorf("conv %v: no float32 step of lesson 05 takes it on %s", s, env.Session.Device.Name)
			}
			var bufs []*gpu.Buffer[float32]
			defer func() {
				for _, b := range bufs {
					b.Free()
				}
			}()
			for _, x := range [][]float32{find(in, "x").Data, find(in, "w").Data, find(in, "bias").Data} {
				b, err := gpu.Upload(env.Session, x)
				if err != nil {
					return nil, st.Name, err
				}
				bufs = append(bufs, b)
			}
			y, err := gpu.Alloc[float32](env.Session, s.YLen())
			if err != nil {
				return nil, st.Name, err
			}
			bufs = append(bufs, y)
			if err := y.Poison(); err != nil {
				return nil, st.Name, err
			}
			p, err := conv.NewProblemOn(env, s, bufs[0], bufs[1], bufs[2], y)
			if err != nil {
				return nil, st.Name, err
			}
			defer p.Free()
			run, _, _, err := p.Launcher(st, "")
			if err != nil {
				return nil, st.Name, err
			}
			if err := run(); err != nil {
				return nil, st.Name, err
			}
			out, err := y.ToHost()
			return map[string][]float32{"y": out}, st.Name, err
		},
		Reference: func(sh Shape, in []Input, step string) []Output {
			s := convShape(sh)
			tol := conv.Tol(conv.F32)
			if st, err := conv.StepByName(step); err == nil {
				tol = st.Tol
			}
			x, w, b := find(in, "x").Data, find(in, "w").Data, find(in, "bias").Data
			// PyTorch's conv2d is a convolution of the input padded with zeros: a padded tap adds
			// 0 x w, which is NaN where w is infinite. The reference takes that formula (R1); the
			// lesson's own reference skips padded taps, which is the same on finite filters.
			ps := s
			ps.H, ps.W, ps.P = s.H+2*s.P, s.W+2*s.P, 0
			want := conv.Conv(ps, conv.Inputs{X: zeroPadded(x, s), W: w, B: b})
			// Each output sums C R R products and the bias, on CUDA cores in float32.
			mag := conv.Conv(s, conv.Inputs{X: absolute(x), W: absolute(w), B: absolute(b)})
			bound := sumBounds("float32", mag, func(int) int { return s.C * s.R * s.R }, true)
			return []Output{{Name: "y", Want: want, Mag: mag, Bound: bound, Tol: tol, Cols: s.OW()}}
		},
		Torch: `
N, C, H, W, K, R, S, P = META["dims"]
return {"y": torch.nn.functional.conv2d(I["x"], I["w"], I["bias"], stride=S, padding=P)}`,
	}
}

// zeroPadded is x (N, C, H, W) inside a border of s.P zeros on every side: (N, C, H+2P, W+2P).
func zeroPadded(x []float32, s conv.Shape) []float32 {
	h, w := s.H+2*s.P, s.W+2*s.P
	out := make([]float32, s.N*s.C*h*w)
	for nc := 0; nc < s.N*s.C; nc++ {
		for i := 0; i < s.H; i++ {
			copy(out[(nc*h+i+s.P)*w+s.P:], x[(nc*s.H+i)*s.W:(nc*s.H+i+1)*s.W])
		}
	}
	return out
}

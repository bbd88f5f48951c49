package hostile

import (
	"math"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/autograd"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons/trilinear"
)

// dfeats is the output dfeats[n][k][f] = W_k(points[n]) g[n][f]: one writer per element, no sum
// over points, but the weight is a float32 formula with a cancellation (1 - u, u rounded), so its
// error is bounded by the formula on absolute values (featsBound), not by the weight's own size.
func dfeats(s trilinear.Shape, points, g []float64) Output {
	mag, bound := featsBound(s, points, g)
	return Output{Name: "dfeats", Want: trilinear.BackwardFeats(s, points, g, nil), Mag: mag, Bound: bound, Tol: trilinear.FeatsTol, Cols: s.F}
}

// outRef is the forward's output with its element bound (outBound).
func outRef(s trilinear.Shape, feats, points []float64) Output {
	mag, bound := outBound(s, feats, points)
	return Output{Name: "out", Want: trilinear.Forward(s, feats, points), Mag: mag, Bound: bound, Tol: trilinear.ForwardTol, Cols: s.F}
}

// trilinearOp is lesson 07's trilinear.GPUOp, forward and backward (dfeats and dpoints).
func trilinearOp() *Op {
	return &Op{
		Name: "trilinear", Lesson: "07",
		Call: "trilinear.NewGPUOp(env): Forward through an autograd tape (feats a device tensor, points a host one), Backward with g",
		Dims: "(N, F): feats is N x 8 x F, points N x 3 (uniform in [-1.2, 1.2]: some clamped)",
		Paths: []string{"tri_fw_float4", "tri_fw_coalesced", "tri_bw_feats_float4", "tri_bw_feats_any",
			"tri_bw_points_float4", "tri_bw_points"},
		Outputs: []string{"out", "dfeats", "dpoints"},
		Shapes: []Shape{
			{Dims: []int{1, 4}, Note: "one point: float4 kernels", Short: true},
			{Dims: []int{1000, 64}, Note: "float4 kernels", Short: true},
			{Dims: []int{999, 30}, Note: "F % 4 != 0: the any-shape kernels", Short: true},
			{Dims: []int{500, 64}, Offset: 1, Note: "feats a view off 16 bytes: the any-shape kernels"},
			{Dims: []int{1024, 256}, Note: "the article's F, float4 kernels"},
		},
		Inputs: func(sh Shape, d Dist, seed uint64) []Input {
			N, F := sh.Dims[0], sh.Dims[1]
			return []Input{draw(sh, d, "feats", []int{N, 8, F}, seed), uniformIn("points", []int{N, 3}, -1.2, 1.2, seed+1),
				draw(sh, Dists[0], "g", []int{N, F}, seed+2)}
		},
		Predict: func(dev gpu.DeviceInfo, sh Shape, _ []Input) string {
			s := trilinear.Shape{N: sh.Dims[0], F: sh.Dims[1]}
			var names []string
			for _, st := range []trilinear.Step{trilinear.OpForward, trilinear.OpBackwardFeats, trilinear.OpBackwardPts} {
				l, err := st.PlanFor(s, dev, sh.Offset%4 == 0)
				if err != nil {
					return "refused: " + err.Error()
				}
				names = append(names, l.Kernel)
			}
			return strings.Join(names, "; ")
		},
		Run: func(env *lab.Env, sh Shape, in []Input) (map[string][]float32, string, error) {
			op, err := trilinear.NewGPUOp(env)
			if err != nil {
				return nil, "", err
			}
			feats, free, err := onDevice(env, find(in, "feats"), sh.Offset)
			if err != nil {
				return nil, "", err
			}
			defer free()
			pi := find(in, "points")
			points := autograd.Param("points", check.Float64s(pi.Data), pi.Shape...)
			defer points.Free()
			tp := autograd.NewTape()
			defer tp.Free()
			out, err := tp.Apply(op, feats, points)
			if err != nil {
				return nil, strings.Join(op.Launches, "; "), err
			}
			g := find(in, "g")
			if err := tp.BackwardWith(out, autograd.New("g", check.Float64s(g.Data), g.Shape...)); err != nil {
				return nil, strings.Join(op.Launches, "; "), err
			}
			defer feats.Grad.Free()
			defer points.Grad.Free()
			got, err := values(map[string]*autograd.Tensor{"out": out, "dfeats": feats.Grad, "dpoints": points.Grad})
			return got, strings.Join(op.Launches, "; "), err
		},
		Reference: func(sh Shape, in []Input, _ string) []Output {
			s := trilinear.Shape{N: sh.Dims[0], F: sh.Dims[1]}
			f64, p64, g64 := check.Float64s(find(in, "feats").Data), check.Float64s(find(in, "points").Data), check.Float64s(find(in, "g").Data)
			// dpoints' floor from the finite feats (a non-finite one is judged by its NaNs and Infs).
			ff := make([]float64, len(f64))
			for i, v := range f64 {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					ff[i] = v
				}
			}
			return []Output{
				outRef(s, f64, p64),
				dfeats(s, p64, g64),
				{Name: "dpoints", Want: trilinear.BackwardPoints(s, f64, p64, g64, nil), Tol: trilinear.PointsTolerance(s.F, ff, g64), Cols: 3,
					RowFloor: func(n int) float64 {
						return trilinear.PointsTolerance(s.F, ff[n*8*s.F:(n+1)*8*s.F], g64[n*s.F:(n+1)*s.F]).Floor
					}},
			}
		},
		Torch: `
feats = I["feats"].clone().requires_grad_(True)
points = I["points"].clone().requires_grad_(True)
p = (points.clamp(-1, 1) + 1) / 2
u, v, w = p[:, 0], p[:, 1], p[:, 2]
ws = []
for k in range(8):
    a = u if k & 4 else 1 - u
    b = v if k & 2 else 1 - v
    c = w if k & 1 else 1 - w
    ws.append(a * b * c)
out = (torch.stack(ws, 1)[:, :, None] * feats).sum(1)
out.backward(I["g"])
return {"out": out, "dfeats": feats.grad, "dpoints": points.grad}`,
	}
}

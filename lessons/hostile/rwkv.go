package hostile

import (
	"fmt"
	"math"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/autograd"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons/rwkv"
)

// rwkvPaths are the steps the op's float32 dispatch reaches on compute capability 9.0: v4 (B a
// multiple of 8) and v5 (any B) take every T up to 1024 there, the general steps the rest, so v3 to
// v0 of the dispatch list are never chosen (they are on GPUs whose shared memory v5 overflows).
var rwkvPaths = []string{"v4 balanced", "v5 register tile", "general", "bwd v4 register tile", "bwd general"}

// rwkvOp is lesson 01's rwkv.NewOp at float32 precision: the time-mix forward and its backward (dw, dk).
func rwkvOp() *Op {
	return &Op{
		Name: "rwkv time-mix", Lesson: "01",
		Call:    "rwkv.NewOp(env, shape, rwkv.FP32): Forward through an autograd tape (w and k device tensors), Backward with g",
		Dims:    "(B, C, T): w is C x T, k B x C x T",
		Paths:   rwkvPaths,
		Outputs: []string{"out", "dw", "dk"},
		Shapes: []Shape{
			{Dims: []int{1, 1, 1}, Note: "one element", Short: true},
			{Dims: []int{8, 64, 256}, Note: "B a multiple of 8, T of 4: the fastest steps", Short: true},
			{Dims: []int{3, 5, 13}, Offset: 1, Note: "odd sizes, views off 16 bytes", Short: true},
			{Dims: []int{16, 32, 1024}, Note: "the longest T of the fast steps"},
			{Dims: []int{2, 96, 768}, Note: "the article's T, B not a multiple of 8"},
			{Dims: []int{2, 8, 4100}, Offset: 2, Note: "T past every step but the general one, misaligned"},
		},
		Inputs: func(sh Shape, d Dist, seed uint64) []Input {
			B, C, T := sh.Dims[0], sh.Dims[1], sh.Dims[2]
			return []Input{draw(sh, d, "w", []int{C, T}, seed), draw(sh, d, "k", []int{B, C, T}, seed+1), draw(sh, Dists[0], "g", []int{B, C, T}, seed+2)}
		},
		Predict: func(dev gpu.DeviceInfo, sh Shape, _ []Input) string {
			dp, _ := rwkv.DispatchFor(rwkv.FP32)
			c, err := dp.Choose(rwkv.Shape{B: sh.Dims[0], C: sh.Dims[1], T: sh.Dims[2]}, dev)
			if err != nil {
				return "refused: " + err.Error()
			}
			return c.Fwd.Name + "; " + c.Bwd.Name
		},
		Run: func(env *lab.Env, sh Shape, in []Input) (map[string][]float32, string, error) {
			s := rwkv.Shape{B: sh.Dims[0], C: sh.Dims[1], T: sh.Dims[2]}
			op, c, err := rwkv.NewOp(env, s, rwkv.FP32)
			if err != nil {
				return nil, "", err
			}
			defer op.Free()
			step := c.Fwd.Name + "; " + c.Bwd.Name
			w, freeW, err := onDevice(env, find(in, "w"), sh.Offset)
			if err != nil {
				return nil, step, err
			}
			defer freeW()
			k, freeK, err := onDevice(env, find(in, "k"), sh.Offset)
			if err != nil {
				return nil, step, err
			}
			defer freeK()
			tp := autograd.NewTape()
			defer tp.Free()
			out, err := tp.Apply(op, w, k)
			if err != nil {
				return nil, step, err
			}
			g := find(in, "g")
			if err := tp.BackwardWith(out, autograd.New("g", check.Float64s(g.Data), g.Shape...)); err != nil {
				return nil, step, err
			}
			defer w.Grad.Free()
			defer k.Grad.Free()
			got, err := values(map[string]*autograd.Tensor{"out": out, "dw": w.Grad, "dk": k.Grad})
			return got, step, err
		},
		Reference: func(sh Shape, in []Input, step string) []Output {
			s := rwkv.Shape{B: sh.Dims[0], C: sh.Dims[1], T: sh.Dims[2]}
			w, k, g := find(in, "w").Data, find(in, "k").Data, find(in, "g").Data
			tol, dtype := check.FP32, "float32"
			if st, err := rwkv.StepByName(strings.Split(step, "; ")[0]); err == nil && st.Tol.Name != "" {
				tol, dtype = st.Tol, st.DType
			}
			aw, ak, ag := absolute(w), absolute(k), absolute(g)
			T := s.T
			// out[b][c][t] sums t+1 products and eps; dw[c][j] B (j+1) products; dk[b][c][u] T-u.
			outMag := rwkv.Forward(s, aw, ak, math.Abs(rwkv.Eps))
			dwMag, dkMag := rwkv.BackwardDW(s, ak, ag), rwkv.BackwardDK(s, aw, ag)
			return []Output{
				{Name: "out", Want: rwkv.Forward(s, w, k, rwkv.Eps), Mag: outMag, Tol: tol, Cols: T,
					Bound: sumBounds(dtype, outMag, func(i int) int { return i%T + 1 }, true)},
				{Name: "dw", Want: rwkv.BackwardDW(s, k, g), Mag: dwMag, Tol: rwkv.DWTolerance, Cols: T,
					Bound: sumBounds("float32", dwMag, func(i int) int { return s.B * (i%T + 1) }, false)},
				{Name: "dk", Want: rwkv.BackwardDK(s, w, g), Mag: dkMag, Tol: rwkv.DKTolerance, Cols: T,
					Bound: sumBounds("float32", dkMag, func(i int) int { return T - i%T }, false)},
			}
		},
		Torch: fmt.Sprintf(`
B, C, T = META["dims"]
w = I["w"].clone().requires_grad_(True)
k = I["k"].clone().requires_grad_(True)
out = torch.nn.functional.conv1d(torch.nn.functional.pad(k, (T - 1, 0)), w[:, None, :], groups=C) + %v
out.backward(I["g"])
return {"out": out, "dw": w.grad, "dk": k.grad}`, rwkv.Eps),
	}
}

package hostile

import (
	"strings"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons/oneflow"
)

// mulOp is lesson 02's elementwise multiply, the article's packed step, on a reader's values:
// oneflow.NewMulProblem's buffers, filled with Upload.
func mulOp() *Op {
	step := oneflow.MulSteps[1]
	return &Op{
		Name: "elementwise multiply", Lesson: "02",
		Call:    "oneflow.NewMulProblem(env, oneflow.F32, n, seed, offset), X.Upload(x) and Y.Upload(y), Launcher(the packed step), Z.Read",
		Dims:    "(rows, cols): x and y hold rows x cols floats, multiplied as flat vectors",
		Paths:   []string{"mul_packed_f32", "mul_pack1_f32"},
		Outputs: []string{"z"},
		Shapes: []Shape{
			{Dims: []int{1, 1}, Note: "one element", Short: true},
			{Dims: []int{3, 5}, Note: "a tail shorter than a pack", Short: true},
			{Dims: []int{1024, 1027}, Note: "packs of 4 and a tail"},
			{Dims: []int{1024, 1024}, Offset: 1, Note: "views off 16 bytes: the pack-1 kernel", Short: true},
		},
		Inputs: func(sh Shape, d Dist, seed uint64) []Input {
			return []Input{draw(sh, d, "x", sh.Dims, seed), draw(sh, d, "y", sh.Dims, seed+1)}
		},
		Predict: func(dev gpu.DeviceInfo, sh Shape, _ []Input) string {
			ptr := addr(4 * sh.Offset)
			l, err := oneflow.PlanMul(dev, step, oneflow.F32, size(sh.Dims), ptr, ptr, ptr)
			if err != nil {
				return "refused: " + err.Error()
			}
			return l.Kernel
		},
		Run: func(env *lab.Env, sh Shape, in []Input) (map[string][]float32, string, error) {
			p, err := oneflow.NewMulProblem(env, oneflow.F32, size(sh.Dims), 1, sh.Offset)
			if err != nil {
				return nil, "", err
			}
			defer p.Free()
			if err := p.X.Upload(find(in, "x").Data); err != nil {
				return nil, "", err
			}
			if err := p.Y.Upload(find(in, "y").Data); err != nil {
				return nil, "", err
			}
			if err := p.Z.Poison(); err != nil {
				return nil, "", err
			}
			run, l, _, err := p.Launcher(step, "")
			if err != nil {
				return nil, l.Kernel, err
			}
			if err := run(); err != nil {
				return nil, l.Kernel, err
			}
			z, err := p.Z.Read()
			return map[string][]float32{"z": float32s(z)}, l.Kernel, err
		},
		Reference: func(sh Shape, in []Input, _ string) []Output {
			return []Output{{Name: "z", Want: oneflow.MulReference(find(in, "x").Data, find(in, "y").Data), Tol: oneflow.MulTolerance(oneflow.F32), Cols: sh.Dims[len(sh.Dims)-1]}}
		},
		Torch: `
return {"z": I["x"] * I["y"]}`,
	}
}

// upsampleOp is lesson 02's nearest 2x upsample, forward and backward, the pack2x step on a
// reader's values: oneflow.NewUpProblem's buffers, filled with Upload.
func upsampleOp() *Op {
	step := oneflow.UpSteps[1]
	return &Op{
		Name: "upsample 2x", Lesson: "02",
		Call:    "oneflow.NewUpProblem(env, oneflow.F32, shape, seed, offset), X.Upload(x) and DY.Upload(dy), Launcher(pack2x) forward and backward, Y.Read and DX.Read",
		Dims:    "(N, C, H, W): x is N x C x H x W, y and dy N x C x 2H x 2W",
		Paths:   []string{"up2x_fwd_f32", "up_generic_fwd_f32", "up2x_bwd_f32", "up_generic_bwd_f32"},
		Outputs: []string{"y", "dx"},
		Shapes: []Shape{
			{Dims: []int{1, 1, 1, 1}, Note: "one pixel", Short: true},
			{Dims: []int{2, 3, 17, 31}, Note: "odd sides: pack2x", Short: true},
			{Dims: []int{2, 3, 64, 64}, Offset: 1, Note: "views off 8 bytes: the generic kernels", Short: true},
			{Dims: []int{2, 16, 80, 80}, Note: "the article's 80 x 80 maps"},
		},
		Inputs: func(sh Shape, d Dist, seed uint64) []Input {
			n, c, h, w := sh.Dims[0], sh.Dims[1], sh.Dims[2], sh.Dims[3]
			return []Input{draw(sh, d, "x", sh.Dims, seed), draw(sh, d, "dy", []int{n, c, 2 * h, 2 * w}, seed+1)}
		},
		Predict: func(dev gpu.DeviceInfo, sh Shape, _ []Input) string {
			shape := [4]int(sh.Dims)
			ptr := addr(4 * sh.Offset)
			var names []string
			for _, dir := range []string{oneflow.Forward, oneflow.Backward} {
				l, err := oneflow.PlanUpsample(dev, step, oneflow.F32, dir, shape, ptr)
				if err != nil {
					return "refused: " + err.Error()
				}
				names = append(names, l.Kernel)
			}
			return names[0] + "; " + names[1]
		},
		Run: func(env *lab.Env, sh Shape, in []Input) (map[string][]float32, string, error) {
			p, err := oneflow.NewUpProblem(env, oneflow.F32, [4]int(sh.Dims), 1, sh.Offset)
			if err != nil {
				return nil, "", err
			}
			defer p.Free()
			if err := p.X.Upload(find(in, "x").Data); err != nil {
				return nil, "", err
			}
			if err := p.DY.Upload(find(in, "dy").Data); err != nil {
				return nil, "", err
			}
			for _, b := range []*oneflow.Buffer{p.Y, p.DX} {
				if err := b.Poison(); err != nil {
					return nil, "", err
				}
			}
			var steps []string
			for _, dir := range []string{oneflow.Forward, oneflow.Backward} {
				run, l, _, err := p.Launcher(step, dir, "")
				if err == nil {
					steps = append(steps, l.Kernel)
					err = run()
				}
				if err != nil {
					return nil, joinSteps(steps), err
				}
			}
			out := map[string][]float32{}
			for name, b := range map[string]*oneflow.Buffer{"y": p.Y, "dx": p.DX} {
				v, err := b.Read()
				if err != nil {
					return nil, joinSteps(steps), err
				}
				out[name] = float32s(v)
			}
			return out, joinSteps(steps), nil
		},
		Reference: func(sh Shape, in []Input, _ string) []Output {
			shape := [4]int(sh.Dims)
			return []Output{
				{Name: "y", Want: oneflow.UpForwardReference(find(in, "x").Data, shape), Tol: oneflow.UpTolerance(oneflow.F32, oneflow.Forward), Cols: 2 * shape[3]},
				{Name: "dx", Want: oneflow.UpBackwardReference(find(in, "dy").Data, shape), Tol: oneflow.UpTolerance(oneflow.F32, oneflow.Backward), Cols: shape[3]},
			}
		},
		Torch: `
x = I["x"].clone().requires_grad_(True)
y = torch.nn.functional.interpolate(x, scale_factor=2, mode="nearest")
y.backward(I["dy"])
return {"y": y, "dx": x.grad}`,
	}
}

// addr is a device address for a plan: a buffer's start, offset bytes past a 256-byte boundary (as
// cuMemAlloc returns), for the plans that choose by alignment.
type addr uintptr

// DevicePtr implements gpu.DevicePointer.
func (a addr) DevicePtr() uintptr { return 1<<20 + uintptr(a) }

func joinSteps(steps []string) string { return strings.Join(steps, "; ") }

package hostile

import (
	"fmt"
	"math"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/autograd"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons/hopper"
	"github.com/cudalessons/cudalessons/lessons/matmul"
	"github.com/cudalessons/cudalessons/lessons/reduce"
)

// Catalogue is every public op the harness feeds, each with its paths and the shapes that take
// them on compute capability 9.0 (the H100 and H200; Predict says what another GPU picks): there
// softmax never takes step 4 (the cluster step takes its rows) and Multiply's accurate dispatch
// never the warp-tile or shared-memory steps for these sizes.
func Catalogue() []*Op {
	return []*Op{softmaxOp(), layerNormOp(), multiplyOp(), hopperMultiplyOp(), matmulOp(), hopperOp(), trilinearOp(), giouOp(), rwkvOp(), convOp(), mulOp(), upsampleOp()}
}

// OpByName finds an op of the catalogue.
func OpByName(name string) (*Op, error) {
	var names []string
	for _, op := range Catalogue() {
		if op.Name == name {
			return op, nil
		}
		names = append(names, op.Name)
	}
	return nil, fmt.Errorf("no op %q in the catalogue (%s)", name, strings.Join(names, ", "))
}

func size(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func float32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// onDevice uploads in as a tensor offset floats into a buffer of its own (a view off 16-byte
// alignment when offset is not a multiple of 4), a leaf whose gradient the tape computes.
func onDevice(env *lab.Env, in Input, offset int) (*autograd.Tensor, func(), error) {
	whole, err := gpu.Alloc[float32](env.Session, len(in.Data)+offset)
	if err != nil {
		return nil, nil, err
	}
	view, err := whole.View(offset, len(in.Data))
	if err == nil {
		err = view.CopyFromHost(in.Data)
	}
	if err != nil {
		whole.Free()
		return nil, nil, err
	}
	t := autograd.OnDevice(in.Name, view, false, in.Shape...)
	t.RequiresGrad = true
	return t, func() { whole.Free() }, nil
}

// values downloads tensors' values as float32.
func values(ts map[string]*autograd.Tensor) (map[string][]float32, error) {
	out := map[string][]float32{}
	for name, t := range ts {
		if t == nil {
			return nil, fmt.Errorf("%s: no value", name)
		}
		v, err := t.Values()
		if err != nil {
			return nil, err
		}
		out[name] = float32s(v)
	}
	return out, nil
}

// finiteRows keeps the rows of x (and the same rows of y) that hold only finite values: the
// lessons' tolerance models are derived for finite data, the other rows are judged by their NaNs.
func finiteRows(x, y []float32, cols int) (fx, fy []float32) {
	for r := 0; r*cols < len(x); r++ {
		row := x[r*cols : (r+1)*cols]
		ok := true
		for _, v := range row {
			ok = ok && isFinite(float64(v))
		}
		if ok {
			fx, fy = append(fx, row...), append(fy, y[r*cols:(r+1)*cols]...)
		}
	}
	return fx, fy
}

// softmaxOp is lesson 04's reduce.SoftmaxOp, forward and backward.
func softmaxOp() *Op {
	s := reduce.SoftmaxSteps
	return &Op{
		Name: "softmax", Lesson: "04",
		Call:    "reduce.NewSoftmaxOp(env): Forward through an autograd tape on a device tensor, Backward with dy",
		Dims:    "x's shape; softmax over the last dimension",
		Paths:   []string{s[5].Name, s[7].Name, s[10].Name, s[9].Name, "s10_backward.cu"},
		Masks:   true,
		Outputs: []string{"y", "dx"},
		Shapes: []Shape{
			{Dims: []int{64, 1}, Note: "rows of one element: step 6", Short: true},
			{Dims: []int{4, 8, 768}, Note: "a warp per row, float4 (step 6)", Short: true},
			{Dims: []int{3, 1001}, Offset: 1, Note: "step 6 on single floats: a view off 16 bytes, cols % 4 != 0"},
			{Dims: []int{6, 4099}, Note: "a cluster per row (step 8)"},
			{Dims: []int{2, 65537}, Offset: 3, Note: "step 8 at the length masked rows broke", Short: true},
			{Dims: []int{300, 2051}, Offset: 1, Note: "many rows, misaligned: step 8 (step 4 where the cluster step is refused, below compute capability 9.0)"},
			{Dims: []int{1, 262145}, Note: "past ClusterMaxCols: step 11 (a team of blocks)", Short: true},
			{Dims: []int{2, 300001}, Offset: 1, Note: "step 11, misaligned"},
			{Dims: []int{1, 4000003}, Note: "past what step 11 holds: step 10 (a row over many blocks)"},
		},
		Inputs: func(sh Shape, d Dist, seed uint64) []Input {
			return []Input{draw(sh, d, "x", sh.Dims, seed), draw(sh, Dists[0], "dy", sh.Dims, seed+1)}
		},
		Predict: func(dev gpu.DeviceInfo, sh Shape, _ []Input) string {
			cols := sh.Dims[len(sh.Dims)-1]
			in := reduce.SoftmaxInput{DType: reduce.F32, Rows: size(sh.Dims) / cols, Cols: cols, Aligned: sh.Offset%4 == 0, SameOffset: sh.Offset%4 == 0, Device: dev}
			return reduce.PickSoftmax(in).Name + "; s10_backward.cu"
		},
		Run: func(env *lab.Env, sh Shape, in []Input) (map[string][]float32, string, error) {
			op, err := reduce.NewSoftmaxOp(env)
			if err != nil {
				return nil, "", err
			}
			op.Poison = true
			defer op.Free()
			x, free, err := onDevice(env, find(in, "x"), sh.Offset)
			if err != nil {
				return nil, "", err
			}
			defer free()
			tp := autograd.NewTape()
			defer tp.Free()
			y, err := tp.Apply(op, x)
			if err != nil {
				return nil, strings.Join(op.Launches, "; "), err
			}
			dy := find(in, "dy")
			if err := tp.BackwardWith(y, autograd.New("dy", check.Float64s(dy.Data), dy.Shape...)); err != nil {
				return nil, strings.Join(op.Launches, "; "), err
			}
			defer x.Grad.Free()
			out, err := values(map[string]*autograd.Tensor{"y": y, "dx": x.Grad})
			return out, strings.Join(op.Launches, "; "), err
		},
		Reference: func(sh Shape, in []Input, _ string) []Output {
			x, dy := find(in, "x").Data, find(in, "dy").Data
			cols := sh.Dims[len(sh.Dims)-1]
			var y, dx []float64
			for r := 0; r*cols < len(x); r++ {
				yr := reduce.SoftmaxRow(x[r*cols : (r+1)*cols])
				y = append(y, yr...)
				dx = append(dx, reduce.SoftmaxBackwardRow(yr, dy[r*cols:(r+1)*cols])...)
			}
			// The backward's tolerance from the rows whose y is finite (a NaN row is judged by its NaNs).
			var fy []float64
			var fdy []float32
			for i, v := range y {
				if isFinite(v) {
					fy, fdy = append(fy, v), append(fdy, dy[i])
				}
			}
			rowFloor := func(r int) float64 {
				return reduce.SoftmaxBackwardTolerance(y[r*cols:(r+1)*cols], dy[r*cols:(r+1)*cols]).Floor
			}
			return []Output{
				{Name: "y", Want: y, Tol: check.FP32, Cols: cols},
				{Name: "dx", Want: dx, Tol: reduce.SoftmaxBackwardTolerance(fy, fdy), Cols: cols, RowFloor: rowFloor},
			}
		},
		Torch: `
x = I["x"].clone().requires_grad_(True)
y = torch.softmax(x, -1)
y.backward(I["dy"])
return {"y": y, "dx": x.grad}`,
	}
}

// layerNormOp is lesson 04's reduce.LayerNormOp, forward and backward.
func layerNormOp() *Op {
	s := reduce.LNSteps
	return &Op{
		Name: "layer norm", Lesson: "04",
		Call:    "reduce.NewLayerNormOp(env, axes): Forward through an autograd tape (x a device tensor, weight and bias host parameters), Backward with dy",
		Dims:    "x's shape; the last Axes dimensions normalised",
		Paths:   []string{s[4].Name, s[5].Name, s[3].Name, s[2].Name, "l7_backward.cu"},
		Outputs: []string{"y", "dx", "dweight", "dbias"},
		Shapes: []Shape{
			{Dims: []int{16, 1}, Axes: 1, Note: "samples of one element: variance 0, dx 0", Short: true},
			{Dims: []int{4, 8, 768}, Axes: 1, Note: "a warp per sample (step 5)", Short: true},
			{Dims: []int{3, 1001}, Axes: 1, Offset: 1, Note: "misaligned, M % 4 != 0: step 3 on single floats", Short: true},
			{Dims: []int{6, 40, 100}, Axes: 2, Note: "two normalised dims, a block per sample (step 5)"},
			{Dims: []int{2, 65540}, Axes: 1, Note: "past a block's shared memory: step 6 (grid-resident)", Short: true},
			{Dims: []int{3, 65537}, Axes: 1, Note: "odd M: step 3"},
			{Dims: []int{1, 4200000}, Axes: 1, Note: "past half the L2: step 4 (fused normalise + affine)"},
		},
		Inputs: func(sh Shape, d Dist, seed uint64) []Input {
			norm := sh.Dims[len(sh.Dims)-sh.Axes:]
			return []Input{draw(sh, d, "x", sh.Dims, seed),
				uniformIn("weight", norm, 0.5, 1.5, seed+1), uniformIn("bias", norm, -0.5, 0.5, seed+2),
				draw(sh, Dists[0], "dy", sh.Dims, seed+3)}
		},
		Predict: func(dev gpu.DeviceInfo, sh Shape, _ []Input) string {
			M := size(sh.Dims[len(sh.Dims)-sh.Axes:])
			return reduce.ForwardStep(dev, size(sh.Dims)/M, M, sh.Offset%4 == 0).Name + "; l7_backward.cu"
		},
		Run: func(env *lab.Env, sh Shape, in []Input) (map[string][]float32, string, error) {
			op, err := reduce.NewLayerNormOp(env, sh.Axes)
			if err != nil {
				return nil, "", err
			}
			op.Poison = true
			defer op.Free()
			x, free, err := onDevice(env, find(in, "x"), sh.Offset)
			if err != nil {
				return nil, "", err
			}
			defer free()
			wi, bi := find(in, "weight"), find(in, "bias")
			w := autograd.Param("weight", check.Float64s(wi.Data), wi.Shape...)
			b := autograd.Param("bias", check.Float64s(bi.Data), bi.Shape...)
			defer w.Free()
			defer b.Free()
			tp := autograd.NewTape()
			defer tp.Free()
			y, err := tp.Apply(op, x, w, b)
			if err != nil {
				return nil, strings.Join(op.Launches, "; "), err
			}
			dy := find(in, "dy")
			if err := tp.BackwardWith(y, autograd.New("dy", check.Float64s(dy.Data), dy.Shape...)); err != nil {
				return nil, strings.Join(op.Launches, "; "), err
			}
			for _, t := range []*autograd.Tensor{x, w, b} {
				defer t.Grad.Free()
			}
			out, err := values(map[string]*autograd.Tensor{"y": y, "dx": x.Grad, "dweight": w.Grad, "dbias": b.Grad})
			return out, strings.Join(op.Launches, "; "), err
		},
		Reference: func(sh Shape, in []Input, _ string) []Output {
			x, w, b, dy := find(in, "x").Data, find(in, "weight").Data, find(in, "bias").Data, find(in, "dy").Data
			M := len(w)
			N := len(x) / M
			var y []float64
			for n := 0; n < N; n++ {
				yn, _, _ := reduce.LayerNormSample(x[n*M:(n+1)*M], w, b, reduce.LNEps)
				y = append(y, yn...)
			}
			dx, dw, db := reduce.LayerNormBackward(x, w, dy, N, M, reduce.LNEps)
			dxTol, dxFloor, dwTol, dbTol := lnBackwardTolerances(x, w, dy, N, M)
			return []Output{
				{Name: "y", Want: y, Tol: check.FP32, Cols: M},
				{Name: "dx", Want: dx, Tol: dxTol, Cols: M, RowFloor: dxFloor},
				{Name: "dweight", Want: dw, Tol: dwTol, Cols: M},
				{Name: "dbias", Want: db, Tol: dbTol, Cols: M},
			}
		},
		Torch: fmt.Sprintf(`
x = I["x"].clone().requires_grad_(True)
w = I["weight"].clone().requires_grad_(True)
b = I["bias"].clone().requires_grad_(True)
y = torch.nn.functional.layer_norm(x, tuple(I["weight"].shape), w, b, eps=%v)
y.backward(I["dy"])
return {"y": y, "dx": x.grad, "dweight": w.grad, "dbias": b.grad}`, reduce.LNEps),
	}
}

// lnBackwardTolerances are the floors of reduce.LNBackwardTolerance kept apart, by its own rounding
// model: dx's, rstd times three terms and two means of RMS T = rms(dy) rms(w), for each sample with
// its own rstd and dy (dxFloor; dxTol's floor is the largest); dweight's, sums of N terms dy xhat;
// dbias's, sums of N terms dy. The lesson takes the largest for all three, which is right for its
// O(1) inputs; at 1e30 dx is 1e-30 while the sums' floor stays 1e-8, and one floor for all would
// pass any dx (and at 1e-30, where xhat is 1e-25, any dweight).
func lnBackwardTolerances(x, w, dy []float32, N, M int) (dxTol check.Tolerance, dxFloor func(int) float64, dwTol, dbTol check.Tolerance) {
	rmsOf := func(v []float64) float64 {
		var s float64
		for _, a := range v {
			s += a * a
		}
		return math.Sqrt(s / float64(max(len(v), 1)))
	}
	rw := rmsOf(check.Float64s(w))
	floors := make([]float64, N)
	var dyx, dys []float64
	worst := 0.0
	for n := 0; n < N; n++ {
		xs, ds := x[n*M:(n+1)*M], check.Float64s(dy[n*M:(n+1)*M])
		_, mean, rstd := reduce.LayerNormSample(xs, w, w, reduce.LNEps)
		T := rmsOf(ds) * rw
		floors[n] = rstd * (check.SumFloor(check.U32, 3, T) + 2*check.SumFloor(check.U32, M, T)/float64(M))
		if !isFinite(floors[n]) {
			continue
		}
		worst = math.Max(worst, floors[n])
		for i, v := range xs {
			dyx = append(dyx, ds[i]*(float64(v)-mean)*rstd)
		}
		dys = append(dys, ds...)
	}
	if len(dys) == 0 {
		return check.FP32, nil, check.FP32, check.FP32
	}
	sum := func(terms []float64) check.Tolerance {
		return check.FP32.WithFloor(check.SumFloor(check.U32, N, rmsOf(terms)), fmt.Sprintf("sums of N = %d terms of RMS %.2g", N, rmsOf(terms)))
	}
	return check.FP32.WithFloor(worst, "dx: each sample's rstd times three terms and two means of its dy w"),
		func(n int) float64 { return floors[n] }, sum(dyx), sum(dys)
}

// matmulShapes are the products (M, K, N) of both Multiplys: the paths of lesson 03's dispatch, and
// products large enough for lesson 08's split.
var matmulShapes = []Shape{
	{Dims: []int{1, 1, 1}, Note: "one element: K < SmallK, the thin-K step", Short: true},
	{Dims: []int{64, 4, 96}, Note: "K < SmallK: the thin-K step"},
	{Dims: []int{256, 384, 160}, Note: "the fp16x3 split where the inputs are in fp16's range, else 3xTF32", Short: true},
	{Dims: []int{256, 384, 160}, Plain: []string{"b"}, Note: "one operand at the distribution's scale, the other at 1"},
	{Dims: []int{1000, 777, 300}, Note: "no tile divides it: the any-shape step"},
	{Dims: []int{512, 1024, 512}, Note: "2^28 multiply-adds: lesson 08's split from here", Short: true},
	{Dims: []int{512, 1024, 512}, Plain: []string{"a"}, Note: "lesson 08's split, one operand at 1"},
}

// matmulDType is the dtype of the step a Multiply ran (float32 when unknown).
func matmulDType(step string) string {
	if step == hopper.Split.Name {
		return "fp16x3"
	}
	st, err := matmul.StepByName(strings.TrimPrefix(step, hopper.Lesson03Prefix))
	if err != nil {
		return "float32"
	}
	return st.DType
}

func matmulInputs(sh Shape, d Dist, seed uint64) []Input {
	M, K, N := sh.Dims[0], sh.Dims[1], sh.Dims[2]
	return []Input{draw(sh, d, "a", []int{M, K}, seed), draw(sh, d, "b", []int{K, N}, seed+1)}
}

func matmulReference(sh Shape, in []Input, step string) []Output {
	M, K, N := sh.Dims[0], sh.Dims[1], sh.Dims[2]
	return []Output{productOutput("c", find(in, "a").Data, M, K, find(in, "b").Data, N, matmulDType(step))}
}

const matmulTorch = `
return {"c": I["a"] @ I["b"]}`

// multiplyOp is lesson 03's matmul.Multiply.
func multiplyOp() *Op {
	return &Op{
		Name: "matmul.Multiply", Lesson: "03",
		Call:    "matmul.Multiply(env, a, M, K, b, K, N) on host slices",
		Dims:    "(M, K, N): A is M x K, B is K x N",
		Paths:   []string{matmul.Steps[9].Name, matmul.Steps[8].Name, matmul.AnyShape.Name, matmul.ThinK.Name},
		Outputs: []string{"c"},
		Shapes:  matmulShapes,
		Inputs:  matmulInputs,
		Predict: func(dev gpu.DeviceInfo, sh Shape, in []Input) string {
			return lesson03Pick(dev, sh.Dims[0], sh.Dims[1], sh.Dims[2], find(in, "a").Data, find(in, "b").Data)
		},
		Run: func(env *lab.Env, sh Shape, in []Input) (map[string][]float32, string, error) {
			M, K, N := sh.Dims[0], sh.Dims[1], sh.Dims[2]
			c, st, err := matmul.Multiply(env, find(in, "a").Data, M, K, find(in, "b").Data, K, N)
			if err != nil {
				return nil, st.Name, err
			}
			return map[string][]float32{"c": c}, st.Name, nil
		},
		Reference: matmulReference,
		Torch:     matmulTorch,
	}
}

// hopperMultiplyOp is lesson 08's hopper.Multiply: the split on Hopper for large products, lesson
// 03's Multiply otherwise.
func hopperMultiplyOp() *Op {
	return &Op{
		Name: "hopper.Multiply", Lesson: "08",
		Call:    "hopper.Multiply(env, a, M, K, b, K, N) on host slices",
		Dims:    "(M, K, N): A is M x K, B is K x N",
		Paths:   []string{hopper.Split.Name, hopper.Lesson03Prefix},
		Outputs: []string{"c"},
		Shapes:  matmulShapes,
		Inputs:  matmulInputs,
		Predict: func(dev gpu.DeviceInfo, sh Shape, in []Input) string {
			return lesson08Pick(dev, sh.Dims[0], sh.Dims[1], sh.Dims[2], find(in, "a").Data, find(in, "b").Data)
		},
		Run: func(env *lab.Env, sh Shape, in []Input) (map[string][]float32, string, error) {
			M, K, N := sh.Dims[0], sh.Dims[1], sh.Dims[2]
			c, st, err := hopper.Multiply(env, find(in, "a").Data, M, K, find(in, "b").Data, K, N)
			if err != nil {
				return nil, st, err
			}
			return map[string][]float32{"c": c}, st, nil
		},
		Reference: matmulReference,
		Torch:     matmulTorch,
	}
}

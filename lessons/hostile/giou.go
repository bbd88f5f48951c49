package hostile

import (
	"fmt"
	"math"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/autograd"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons/giou"
)

// giouBatch is the lesson's batch of a case: pred from the distribution, the targets and counts as
// giou.Generate draws them.
func giouBatch(sh Shape, in []Input) *giou.Batch {
	c := find(in, "counts").Data
	counts := make([]int32, len(c))
	for i, v := range c {
		counts[i] = int32(v)
	}
	return &giou.Batch{Shape: giou.Shape{B: sh.Dims[0], M: sh.Dims[1]}, Pred: find(in, "pred").Data, Target: find(in, "target").Data, Counts: counts}
}

// giouOp is lesson 06's giou.GPUOp: the loss alone (pred needs no gradient), and the loss squared
// with its gradient (the fused training kernel, then the upstream gradient's scaling).
func giouOp() *Op {
	return &Op{
		Name: "giou loss", Lesson: "06",
		Call:    "giou.NewGPUOp(env, batch): Forward on a device pred without a gradient (the loss), then giou.GradLoss (loss squared) and Backward",
		Dims:    "(B, M): pred and target are B x M x 4, image b holding counts[b] valid boxes (giou.Generate's)",
		Paths:   []string{"giou_warp_f32", "giou_warp_f32_any", "giou_warp_train_f32", "giou_warp_train_f32_any", "giou_scale_grad"},
		Outputs: []string{"loss", "dpred"},
		Shapes: []Shape{
			{Dims: []int{1, 1}, Note: "one slot (its image may hold no box: loss 0)", Short: true},
			{Dims: []int{8, 32}, Note: "float4 loads of each box", Short: true},
			{Dims: []int{8, 32}, Offset: 1, Note: "pred a view off 16 bytes: the scalar-load kernels", Short: true},
			{Dims: []int{256, 100}, Note: "many images"},
			{Dims: []int{64, 300}, Offset: 2, Note: "many boxes an image, misaligned"},
		},
		Inputs: func(sh Shape, d Dist, seed uint64) []Input {
			// The lesson's boxes, each pair (pred and its target) scaled by one value of the
			// distribution: GIoU does not change with the scale, its gradient goes as 1/scale.
			s := giou.Shape{B: sh.Dims[0], M: sh.Dims[1]}
			bt := giou.Generate(s, seed+1)
			f := draw(sh, d, "scale", []int{s.B, s.M}, seed).Data
			counts := make([]float32, len(bt.Counts))
			for i, c := range bt.Counts {
				counts[i] = float32(c)
			}
			pred, target := make([]float32, len(bt.Pred)), make([]float32, len(bt.Target))
			for i := range pred {
				a := float32(math.Abs(float64(f[i/4])))
				pred[i], target[i] = bt.Pred[i]*a, bt.Target[i]*a
			}
			return []Input{{Name: "pred", Shape: []int{s.B, s.M, 4}, Data: pred},
				{Name: "target", Shape: []int{s.B, s.M, 4}, Data: target}, {Name: "counts", Shape: []int{s.B}, Data: counts}}
		},
		Predict: func(dev gpu.DeviceInfo, sh Shape, _ []Input) string {
			s := giou.Shape{B: sh.Dims[0], M: sh.Dims[1]}
			var names []string
			for _, st := range []giou.Step{giou.OpForward, giou.OpTrain} {
				l, err := st.PlanFor(s, sh.Offset%4 == 0)
				if err != nil {
					return "refused: " + err.Error()
				}
				names = append(names, l.Kernels[0].Name)
			}
			return strings.Join(append(names, "giou_scale_grad"), "; ")
		},
		Run: func(env *lab.Env, sh Shape, in []Input) (map[string][]float32, string, error) {
			op, err := giou.NewGPUOp(env, giouBatch(sh, in))
			if err != nil {
				return nil, "", err
			}
			defer op.Close()
			steps := func() string { return strings.Join(op.Launches, "; ") }
			p0, free0, err := onDevice(env, find(in, "pred"), sh.Offset)
			if err != nil {
				return nil, "", err
			}
			defer free0()
			p0.RequiresGrad = false
			tp := autograd.NewTape()
			defer tp.Free()
			loss, err := tp.Apply(op, p0)
			if err != nil {
				return nil, steps(), err
			}
			p1, free1, err := onDevice(env, find(in, "pred"), sh.Offset)
			if err != nil {
				return nil, steps(), err
			}
			defer free1()
			tp2 := autograd.NewTape()
			defer tp2.Free()
			sq, err := giou.GradLoss(tp2, op, p1)
			if err != nil {
				return nil, steps(), err
			}
			if err := tp2.Backward(sq); err != nil {
				return nil, steps(), err
			}
			defer p1.Grad.Free()
			out, err := values(map[string]*autograd.Tensor{"loss": loss, "dpred": p1.Grad})
			return out, steps(), err
		},
		Reference: func(sh Shape, in []Input, _ string) []Output {
			bt := giouBatch(sh, in)
			grad := make([]float64, 4*bt.Slots())
			L := giou.Loss(bt.Shape, check.Float64s(bt.Pred), check.Float64s(bt.Target), bt.Counts, grad)
			dpred := make([]float64, len(grad))
			for i, g := range grad {
				dpred[i] = 2 * L * g
			}
			// The lesson's floor is for the gradient times the box count; dpred is 2L times the gradient.
			// Each image's floor from its own boxes (GradTolerance of the image alone).
			factor := 2 * math.Abs(L) / math.Max(float64(bt.Total()), 1)
			tol := giou.GradTolerance(bt)
			tol.Floor *= factor
			tol.Abs = math.Max(giou.GradTol.Abs, 10*tol.Floor)
			rowFloor := func(b int) float64 {
				o, n := b*bt.M*4, bt.M*4
				img := &giou.Batch{Shape: giou.Shape{B: 1, M: bt.M}, Pred: bt.Pred[o : o+n], Target: bt.Target[o : o+n], Counts: bt.Counts[b : b+1]}
				return giou.GradTolerance(img).Floor * factor
			}
			return []Output{
				{Name: "loss", Want: []float64{L}, Tol: giou.LossTol, Cols: 1},
				{Name: "dpred", Want: dpred, Tol: tol, Cols: 4 * bt.M, RowFloor: rowFloor},
			}
		},
		Torch: fmt.Sprintf(`
B, M = META["dims"]
targets = I["target"]
mask = torch.arange(M, device=targets.device)[None, :] < I["counts"][:, None]


def giou_loss(pred):
    eps = %v
    area1 = (targets[..., 2] - targets[..., 0]) * (targets[..., 3] - targets[..., 1])
    area2 = (pred[..., 2] - pred[..., 0]) * (pred[..., 3] - pred[..., 1])
    wh = (torch.min(targets[..., 2:], pred[..., 2:]) - torch.max(targets[..., :2], pred[..., :2])).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    union = area1 + area2 - inter
    iou = inter / union.clamp(eps)
    whi = (torch.max(targets[..., 2:], pred[..., 2:]) - torch.min(targets[..., :2], pred[..., :2])).clamp(min=0)
    areai = (whi[..., 0] * whi[..., 1]).clamp(eps)
    g = iou - (areai - union) / areai
    terms = torch.where(mask, 1 - g, torch.zeros_like(g))
    return terms.sum() / mask.sum().clamp(min=1)


with torch.no_grad():
    loss = giou_loss(I["pred"])
pred = I["pred"].clone().requires_grad_(True)
(giou_loss(pred) ** 2).backward()
return {"loss": loss, "dpred": pred.grad}`, giou.Eps),
	}
}

package giou

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/torch"
)

// torchScript runs after helpers/torch's prelude (ARGS, bench, emit, try_compile). On OUR batch
// (read from files): the article's three PyTorch variants (the per-sample loop, the concatenated
// call, the padded call with a mask), torch.compile of the padded one, torchvision's
// generalized_box_iou_loss where installed; eager and compiled forward+backward of the padded loss;
// the host-to-device copy of the targets, per sample and padded; and the padded loss and its gradient
// written back for the cross-check. The article's functions return the mean GIoU; the loss is 1 minus
// it (one more scalar op, left out of the timings).
const torchScript = `
def generalized_box_iou(boxes1, boxes2):
    epsilon = 1e-5
    area1 = (boxes1[..., 2] - boxes1[..., 0]) * (boxes1[..., 3] - boxes1[..., 1])
    area2 = (boxes2[..., 2] - boxes2[..., 0]) * (boxes2[..., 3] - boxes2[..., 1])
    lt = torch.max(boxes1[..., :2], boxes2[..., :2])
    rb = torch.min(boxes1[..., 2:], boxes2[..., 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    union = area1 + area2 - inter
    iou = inter / union.clamp(epsilon)
    lti = torch.min(boxes1[..., :2], boxes2[..., :2])
    rbi = torch.max(boxes1[..., 2:], boxes2[..., 2:])
    whi = (rbi - lti).clamp(min=0)
    areai = (whi[..., 0] * whi[..., 1]).clamp(epsilon)
    return iou - (areai - union) / areai

def loss_fn(pred, targets_list):
    batch_size = len(targets_list)
    total_boxes = 0
    loss_sum = 0.
    for i in range(batch_size):
        targets = targets_list[i]
        num_targets = targets.shape[0]
        if num_targets > 0:
            sample_preds = pred[i, :num_targets]
            total_boxes += num_targets
            loss_sum += generalized_box_iou(sample_preds, targets).sum()
    return loss_sum / max(total_boxes, 1)

def loss_with_concat(pred, targets_list):
    bs = len(targets_list)
    all_targets = torch.concat(targets_list, dim=0)
    num_boxes = [targets_list[i].shape[0] for i in range(bs)]
    all_preds = torch.concat([pred[i, :num_boxes[i]] for i in range(bs)], dim=0)
    total_boxes = sum(num_boxes)
    loss_sum = generalized_box_iou(all_targets, all_preds).sum()
    return loss_sum / max(total_boxes, 1)

def loss_with_padding(pred, targets):
    mask = (targets[..., 3] > 0).to(pred.dtype)
    total_boxes = mask.sum()
    loss = generalized_box_iou(targets, pred)
    masked_loss = loss * mask
    loss_sum = masked_loss.sum()
    return loss_sum / torch.clamp(total_boxes, 1)

B, M = ARGS["B"], ARGS["M"]
counts = ARGS["counts"]
def read_f32(path):
    return torch.frombuffer(bytearray(open(path, "rb").read()), dtype=torch.float32).reshape(B, M, 4).clone()

pred_h, tgt_h = read_f32(ARGS["pred"]), read_f32(ARGS["target"])
pred, tgt = pred_h.cuda(), tgt_h.cuda()
targets_list = [tgt[i, :counts[i]].contiguous() for i in range(B)]
res = {}
res["loop"] = bench(lambda: loss_fn(pred, targets_list), warmup=1, reps=ARGS.get("loop_reps", 5))
res["concat"] = bench(lambda: loss_with_concat(pred, targets_list))
res["padded"] = bench(lambda: loss_with_padding(pred, tgt))
compiled, why = try_compile(loss_with_padding, pred, tgt)
if compiled is not None:
    res["compiled"] = bench(lambda: compiled(pred, tgt))
else:
    res["compiled_error"] = why
try:
    from torchvision.ops import generalized_box_iou_loss
    import torchvision
    mask = (tgt[..., 3] > 0).float()
    def tv():
        l = generalized_box_iou_loss(pred, tgt, reduction="none")
        return (l * mask).sum() / torch.clamp(mask.sum(), 1)
    res["torchvision"] = bench(tv)
    res["torchvision_version"] = torchvision.__version__
    res["torchvision_loss"] = float(tv())
except Exception as e:  # noqa: BLE001
    res["torchvision_error"] = "%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0][:200])

pg = pred.clone().requires_grad_(True)
def fwdbwd():
    pg.grad = None
    (1 - loss_with_padding(pg, tgt)).backward()
res["fwdbwd"] = bench(fwdbwd)
if compiled is not None:
    try:
        cfb = torch.compile(loss_with_padding)
        def fwdbwd_compiled():
            pg.grad = None
            (1 - cfb(pg, tgt)).backward()
        fwdbwd_compiled()
        torch.cuda.synchronize()
        res["fwdbwd_compiled"] = bench(fwdbwd_compiled)
    except Exception as e:  # noqa: BLE001
        res["fwdbwd_compiled_error"] = "%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0][:200])

# Host-to-device copy of the targets: one copy per image (the ragged list) or one padded copy,
# from ordinary (pageable) host memory as a DataLoader without pin_memory hands them over.
ragged_h = [tgt_h[i, :counts[i]].clone() for i in range(B)]
res["h2d_ragged"] = bench(lambda: [t.to("cuda") for t in ragged_h], flush=False)
res["h2d_padded"] = bench(lambda: tgt_h.to("cuda"), flush=False)

# The cross-check: the padded loss (1 - mean GIoU) and its gradient on our batch.
fwdbwd()
loss = 1 - loss_with_padding(pred, tgt)
res["loss"] = float(loss)
res["loss_loop"] = 1 - float(loss_fn(pred, targets_list))
res["loss_concat"] = 1 - float(loss_with_concat(pred, targets_list))
g = pg.grad.float().contiguous().cpu()
with open(ARGS["grad_out"], "wb") as fo:
    try:
        fo.write(g.numpy().tobytes())
    except Exception:  # noqa: BLE001 - torch without numpy
        fo.write(bytes(g.view(torch.uint8).reshape(-1).tolist()))
emit(res)
`

// TorchResult is what the PyTorch baseline measured.
type TorchResult struct {
	Loop, Concat, Padded, Compiled, TorchVision torch.Timing
	FwdBwd, FwdBwdCompiled                      torch.Timing
	H2DRagged, H2DPadded                        torch.Timing
	CompiledError, TorchVisionError             string
	FwdBwdCompiledError                         string
	TorchVisionVersion                          string
	Torch, Device                               string
	// Loss is PyTorch's padded loss on our batch; LossLoop and LossConcat the other two variants'.
	Loss, LossLoop, LossConcat, TorchVisionLoss float64
	// Cross is PyTorch's loss and gradient on our batch against our float64 reference.
	Cross, CrossGrad check.Result
}

type torchJSON struct {
	LoopT               torch.Timing `json:"loop"`
	Concat              torch.Timing `json:"concat"`
	Padded              torch.Timing `json:"padded"`
	Compiled            torch.Timing `json:"compiled"`
	TorchVision         torch.Timing `json:"torchvision"`
	FwdBwd              torch.Timing `json:"fwdbwd"`
	FwdBwdCompiled      torch.Timing `json:"fwdbwd_compiled"`
	H2DRagged           torch.Timing `json:"h2d_ragged"`
	H2DPadded           torch.Timing `json:"h2d_padded"`
	CompiledError       string       `json:"compiled_error"`
	TorchVisionError    string       `json:"torchvision_error"`
	FwdBwdCompiledError string       `json:"fwdbwd_compiled_error"`
	TorchVisionVersion  string       `json:"torchvision_version"`
	TorchVisionLoss     float64      `json:"torchvision_loss"`
	Torch               string       `json:"torch"`
	Device              string       `json:"device"`
	Loss                float64      `json:"loss"`
	LossLoop            float64      `json:"loss_loop"`
	LossConcat          float64      `json:"loss_concat"`
}

// RunTorch measures the PyTorch baselines on batch bt by method m and cross-checks PyTorch's loss and
// gradient against our float64 reference. loopReps bounds the per-sample loop's timed runs (each is
// thousands of launches). When python3 has no torch with CUDA, the error says so.
func RunTorch(bt *Batch, m bench.Method, loopReps int) (*TorchResult, error) {
	if _, err := torch.Available(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "giou-torch-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	pp, tp, gp := filepath.Join(dir, "pred.f32"), filepath.Join(dir, "target.f32"), filepath.Join(dir, "grad.f32")
	if err := torch.WriteFloats(pp, bt.Pred); err != nil {
		return nil, err
	}
	if err := torch.WriteFloats(tp, bt.Target); err != nil {
		return nil, err
	}
	args := map[string]any{"B": bt.B, "M": bt.M, "counts": bt.Counts, "pred": pp, "target": tp, "grad_out": gp,
		"warmup": m.Warmup, "reps": m.Reps, "loop_reps": loopReps}
	var j torchJSON
	if err := torch.Run(torchScript, args, &j, 10*time.Minute); err != nil {
		return nil, err
	}
	r := &TorchResult{Loop: j.LoopT, Concat: j.Concat, Padded: j.Padded, Compiled: j.Compiled, TorchVision: j.TorchVision,
		FwdBwd: j.FwdBwd, FwdBwdCompiled: j.FwdBwdCompiled, H2DRagged: j.H2DRagged, H2DPadded: j.H2DPadded,
		CompiledError: j.CompiledError, TorchVisionError: j.TorchVisionError, FwdBwdCompiledError: j.FwdBwdCompiledError,
		TorchVisionVersion: j.TorchVisionVersion, Torch: j.Torch, Device: j.Device, Loss: j.Loss, LossLoop: j.LossLoop,
		LossConcat: j.LossConcat, TorchVisionLoss: j.TorchVisionLoss}
	g, err := torch.ReadFloats(gp, 4*bt.Slots())
	if err != nil {
		return r, fmt.Errorf("reading PyTorch's gradient: %w", err)
	}
	want, grad := bt.Reference()
	r.Cross = compareLoss(r.Loss, want)
	r.CrossGrad = CompareGrad(widen(g), grad, bt)
	return r, nil
}

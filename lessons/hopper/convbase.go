package hopper

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/torch"
	"github.com/cudalessons/cudalessons/lessons/conv"
)

// ConvVendor are cuDNN's convolutions of the deep layer the lesson measures beside steps 7 and 8,
// through F.conv2d, by their keys in the PyTorch script and their record names: float32, TF32 and
// fp16 with PyTorch's default algorithm choice, TF32 and fp16 with cudnn.benchmark (the fastest
// algorithm cuDNN finds by trying), fp16 on channels-last tensors (NHWC, the layout cuDNN's
// Hopper kernels prefer: the conversion is not timed), and torch.compile of the conv in TF32 and in
// fp16.
var ConvVendor = []struct{ Key, Name, DType string }{
	{"fp32", "cuDNN float32", conv.F32},
	{"tf32", "cuDNN TF32", conv.TF32},
	{"tf32_benchmark", "cuDNN TF32, benchmark", conv.TF32},
	{"fp16", "cuDNN fp16", conv.FP16},
	{"fp16_benchmark", "cuDNN fp16, benchmark", conv.FP16},
	{"fp16_nhwc", "cuDNN fp16, channels-last, benchmark", conv.FP16},
	{"tf32_compile", "torch.compile TF32", conv.TF32},
	{"fp16_compile", "torch.compile fp16", conv.FP16},
}

// convScript runs after helpers/torch's prelude (ARGS, bench, emit). It reads the lesson's layer
// (x, the filters and the bias, float32), times F.conv2d in every ConvVendor form (the fp16 forms
// take x, w and b in half and return half; the compiled forms are compiled once, untimed), and
// returns each form's outputs at the sampled indices, for their errors against the lesson's float64
// reference, or why torch.compile could not compile.
const convScript = `
import torch.nn.functional as F

n, c, h, w, k, r, st, p = ARGS["shape"]
raw = torch.frombuffer(bytearray(open(ARGS["in"], "rb").read()), dtype=torch.float32)
nx, nw = n * c * h * w, k * c * r * r
x = raw[:nx].reshape(n, c, h, w).cuda()
wt = raw[nx:nx + nw].reshape(k, c, r, r).cuda()
b = raw[nx + nw:nx + nw + k].cuda()
idx = torch.tensor(ARGS["idx"], dtype=torch.long, device="cuda")
res = {"times": {}, "samples": {}, "errors": {}}
forms = (("fp32", False, torch.float32, False, False, False), ("tf32", True, torch.float32, False, False, False),
         ("tf32_benchmark", True, torch.float32, False, True, False), ("fp16", False, torch.float16, False, False, False),
         ("fp16_benchmark", False, torch.float16, False, True, False), ("fp16_nhwc", False, torch.float16, True, True, False),
         ("tf32_compile", True, torch.float32, False, False, True), ("fp16_compile", False, torch.float16, False, False, True))
with torch.inference_mode():
    for key, tf32, dt, nhwc, benchmark, compiled in forms:
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cudnn.benchmark = benchmark
        xx, ww, bb = x.to(dt), wt.to(dt), b.to(dt)
        if nhwc:
            xx = xx.contiguous(memory_format=torch.channels_last)
            ww = ww.contiguous(memory_format=torch.channels_last)
        fn = lambda xx: F.conv2d(xx, ww, bb, stride=st, padding=p)
        if compiled:
            torch._dynamo.reset()
            fn, why = try_compile(fn, xx)
            if fn is None:
                res["errors"][key] = why
                continue
        res["times"][key] = bench(lambda: fn(xx))
        y = fn(xx).float().contiguous().reshape(-1)
        res["samples"][key] = y[idx].cpu().tolist()
        del xx, ww, bb, y
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = False
emit(res)
`

// TorchConv is what the cuDNN baseline measured: timings and sampled outputs by ConvVendor key,
// and why a compiled form could not be compiled.
type TorchConv struct {
	Times   map[string]torch.Timing `json:"times"`
	Samples map[string][]float64    `json:"samples"`
	Errors  map[string]string       `json:"errors"`
	Torch   string                  `json:"torch"`
}

// RunTorchConv times cuDNN on the problem's layer and inputs in every ConvVendor form, by the
// method of env, and returns their outputs at the problem's checked indices. When python3 has no
// torch with CUDA, the error says so.
func RunTorchConv(env *lab.Env, p *ConvProblem) (*TorchConv, error) {
	if _, err := torch.Available(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "hopper-conv-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "in.f32")
	if err := torch.WriteFloats(in, append(append(append([]float32{}, p.In.X...), p.In.W...), p.In.B...)); err != nil {
		return nil, err
	}
	s := p.Shape
	idx, _ := p.Reference()
	m := env.Bench.Method
	args := map[string]any{"shape": []int{s.N, s.C, s.H, s.W, s.K, s.R, s.S, s.P}, "in": in, "idx": idx, "warmup": m.Warmup, "reps": m.Reps}
	var r TorchConv
	if err := torch.Run(convScript, args, &r, 10*time.Minute); err != nil {
		return nil, err
	}
	return &r, nil
}

// addConvVendor records cuDNN's forms and torch.compile's on the problem's layer: timed, and checked at the sampled
// outputs against the float64 reference at the tolerance of the form's format (every form is
// recorded, a failed check included, since it is the vendor's). When PyTorch is unavailable, one
// record says why.
func addConvVendor(env *lab.Env, run *record.Run, p *ConvProblem) {
	tc, err := RunTorchConv(env, p)
	if err != nil {
		run.Add(record.Record{Case: ConvCase, Variant: "cuDNN", Kind: "baseline", Shape: p.Shape.Short(), Note: err.Error()})
		return
	}
	run.Receipt.Torch = tc.Torch
	_, want := p.Reference()
	for _, v := range ConvVendor {
		t, ok := tc.Times[v.Key]
		if !ok {
			if why, failed := tc.Errors[v.Key]; failed {
				run.Add(record.Record{Case: ConvCase, Variant: v.Name, Kind: "baseline", DType: v.DType, Shape: p.Shape.Short(), Note: why})
			}
			continue
		}
		tol := conv.Tol(v.DType)
		res := check.Compare(tc.Samples[v.Key], want, tol)
		rec := record.Record{Case: ConvCase, Variant: v.Name, Kind: "baseline", DType: v.DType, Shape: p.Shape.Short(), Size: int64(p.Shape.N),
			Correct: res.OK, RelL2: res.RelL2, MaxAbs: res.MaxAbs, Tol: tol.Name,
			Note: fmt.Sprintf("torch %s, F.conv2d on the lesson's inputs; error on %s", tc.Torch, p.CheckedLabel(false))}
		run.Add(env.WithTiming(rec, conv.Work(p.Shape), t.Bench()))
	}
}

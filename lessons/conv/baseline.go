package conv

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/torch"
)

// TorchExpression is the article's PyTorch model: Conv2d, then ReLU, then MaxPool2d(3, 2).
const TorchExpression = "F.max_pool2d(F.relu(conv(x)), 3, 2) with conv = nn.Conv2d(3, 96, 11, stride=4, padding=2)"

// torchScript runs after helpers/torch's prelude (ARGS, bench, emit, try_compile; TF32 off). For
// every shape it times the conv through cuDNN in float32 (TF32 off: PyTorch's default for
// convolutions is TF32 ON, the prelude turns it off), with TF32 on, and with cudnn.benchmark (the
// fastest algorithm cuDNN can find, tried once); for the fused shape the eager conv + ReLU + pool
// and torch.compile of it, with TF32 off and on. All under torch.inference_mode.
const torchScript = `
import torch.nn.functional as F

torch.manual_seed(3)
res = {"shapes": {}}
with torch.inference_mode():
    for s in ARGS["shapes"]:
        n, c, h, w, k, r, st, p = s
        x = torch.rand(n, c, h, w, device="cuda") * 2 - 1
        conv = torch.nn.Conv2d(c, k, r, stride=st, padding=p).cuda()
        out = {}
        torch.backends.cudnn.allow_tf32 = False
        out["fp32"] = bench(lambda: conv(x))
        torch.backends.cudnn.allow_tf32 = True
        out["tf32"] = bench(lambda: conv(x))
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
        out["fp32_benchmark"] = bench(lambda: conv(x))
        torch.backends.cudnn.benchmark = False
        if s == ARGS["fused"]:
            def layer(x):
                return F.max_pool2d(F.relu(conv(x)), 3, 2)
            out["eager"] = bench(lambda: layer(x))
            compiled, why = try_compile(layer, x)
            if compiled is not None:
                out["compiled"] = bench(lambda: compiled(x))
            else:
                out["compiled_error"] = why
            torch.backends.cudnn.allow_tf32 = True
            out["eager_tf32"] = bench(lambda: layer(x))
            torch._dynamo.reset()
            compiled, why = try_compile(lambda x: layer(x), x)
            if compiled is not None:
                out["compiled_tf32"] = bench(lambda: compiled(x))
            torch.backends.cudnn.allow_tf32 = False
        res["shapes"]["%d,%d,%d,%d,%d,%d,%d,%d" % tuple(s)] = out
        del x, conv
    res["sweep"] = {}
    for s in ARGS.get("sweep", []):
        n, c, h, w, k, r, st, p = s
        x = torch.rand(n, c, h, w, device="cuda") * 2 - 1
        conv = torch.nn.Conv2d(c, k, r, stride=st, padding=p).cuda()
        out = {"fp32": bench(lambda: conv(x))}
        torch.backends.cudnn.allow_tf32 = True
        out["tf32"] = bench(lambda: conv(x))
        torch.backends.cudnn.allow_tf32 = False
        res["sweep"]["%d,%d,%d,%d,%d,%d,%d,%d" % tuple(s)] = out
        del x, conv
    xc = ARGS.get("xcheck")
    if xc:
        n, c, h, w, k, r, st, p = xc["shape"]
        raw = torch.frombuffer(bytearray(open(xc["in"], "rb").read()), dtype=torch.float32)
        nx, nw = n * c * h * w, k * c * r * r
        x = raw[:nx].reshape(n, c, h, w).cuda()
        wt = raw[nx:nx + nw].reshape(k, c, r, r).cuda()
        b = raw[nx + nw:].cuda()
        for name, tf32 in (("fp32", False), ("tf32", True)):
            torch.backends.cudnn.allow_tf32 = tf32
            y = F.conv2d(x, wt, b, stride=st, padding=p).float().contiguous().cpu()
            with open(xc["out_" + name], "wb") as fo:
                fo.write(bytes(y.view(torch.uint8).reshape(-1).tolist()))
        torch.backends.cudnn.allow_tf32 = False
        res["xcheck"] = True
emit(res)
`

// TorchShape is what the PyTorch baseline measured at one shape.
type TorchShape struct {
	FP32          torch.Timing `json:"fp32"`
	TF32          torch.Timing `json:"tf32"`
	FP32Benchmark torch.Timing `json:"fp32_benchmark"`
	Eager         torch.Timing `json:"eager"`
	Compiled      torch.Timing `json:"compiled"`
	CompiledError string       `json:"compiled_error"`
	EagerTF32     torch.Timing `json:"eager_tf32"`
	CompiledTF32  torch.Timing `json:"compiled_tf32"`
}

// TorchResult is the PyTorch baseline's result, by shape key.
type TorchResult struct {
	Shapes map[string]TorchShape `json:"shapes"`
	Sweep  map[string]TorchShape `json:"sweep"`
	XCheck bool                  `json:"xcheck"`
	Torch  string                `json:"torch"`
	Device string                `json:"device"`
	// Cross is PyTorch's conv on our inputs (XShape), float32 and TF32, against our float64
	// reference at the float32 and TF32 bounds.
	Cross, CrossTF32 check.Result `json:"-"`
}

// XShape is the cross-check's layer: AlexNet's filters on two small odd-sized images.
var XShape = Shape{N: 2, C: 3, H: 37, W: 41, K: 96, R: 11, S: 4, P: 2}

func key(s Shape) string {
	return fmt.Sprintf("%d,%d,%d,%d,%d,%d,%d,%d", s.N, s.C, s.H, s.W, s.K, s.R, s.S, s.P)
}

func shapeArgs(s Shape) []int { return []int{s.N, s.C, s.H, s.W, s.K, s.R, s.S, s.P} }

// RunTorch measures the PyTorch baselines at every shape (the eager layer and torch.compile at
// fused) and the conv at every sweep shape by the method m, and cross-checks PyTorch's conv on our
// inputs against our float64 reference. When python3 has no torch with CUDA, the error says so and
// the lesson marks the columns unavailable.
func RunTorch(shapes []Shape, fused Shape, sweep []Shape, m bench.Method) (*TorchResult, error) {
	if _, err := torch.Available(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "conv-xcheck-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in := NewInputs(XShape, 5)
	inPath := filepath.Join(dir, "in.f32")
	outs := map[string]string{"fp32": filepath.Join(dir, "fp32.f32"), "tf32": filepath.Join(dir, "tf32.f32")}
	if err := torch.WriteFloats(inPath, append(append(append([]float32{}, in.X...), in.W...), in.B...)); err != nil {
		return nil, err
	}
	var sh, sw [][]int
	for _, s := range shapes {
		sh = append(sh, shapeArgs(s))
	}
	for _, s := range sweep {
		sw = append(sw, shapeArgs(s))
	}
	args := map[string]any{"shapes": sh, "fused": shapeArgs(fused), "sweep": sw, "warmup": m.Warmup, "reps": m.Reps,
		"xcheck": map[string]any{"shape": shapeArgs(XShape), "in": inPath, "out_fp32": outs["fp32"], "out_tf32": outs["tf32"]}}
	var r TorchResult
	if err := torch.Run(torchScript, args, &r, 10*time.Minute); err != nil {
		return nil, err
	}
	want := Conv(XShape, in)
	for name, res := range map[string]*check.Result{"fp32": &r.Cross, "tf32": &r.CrossTF32} {
		got, err := torch.ReadFloats(outs[name], XShape.YLen())
		if err != nil {
			return &r, fmt.Errorf("reading PyTorch's cross-check output: %w", err)
		}
		*res = check.Compare(check.Float64s(got), want, Tol(map[string]string{"fp32": F32, "tf32": TF32}[name]))
	}
	return &r, nil
}

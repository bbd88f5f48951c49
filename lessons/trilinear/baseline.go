package trilinear

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/torch"
)

// TorchExpression is the article's PyTorch forward (trilinear_interpolation_py), the eager baseline.
const TorchExpression = "u,v,w = (p+1)/2; a=(1-v)(1-w), b=(1-v)w, c=v(1-w), d=1-a-b-c; (1-u)(a f0+b f1+c f2+d f3) + u(a f4+b f5+c f6+d f7)"

// torchScript runs after helpers/torch's prelude (ARGS, bench, emit, try_compile). It times, at the
// article's shape: the eager forward, torch.compile of it, forward+backward through autograd (feats
// only, as in the article, and feats and points), an eager training step (MSE loss, both
// gradients); the eager forward over the N and F sweeps; and writes its forward on our inputs for
// the cross-check.
const torchScript = `
def interp(feats, points):
    u = (points[:, 0:1] + 1) / 2
    v = (points[:, 1:2] + 1) / 2
    w = (points[:, 2:3] + 1) / 2
    a = (1 - v) * (1 - w)
    b = (1 - v) * w
    c = v * (1 - w)
    d = 1 - a - b - c
    return (1 - u) * (a * feats[:, 0] + b * feats[:, 1] + c * feats[:, 2] + d * feats[:, 3]) + \
        u * (a * feats[:, 4] + b * feats[:, 5] + c * feats[:, 6] + d * feats[:, 7])

def inputs(n, f):
    return torch.rand(n, 8, f, device="cuda"), torch.rand(n, 3, device="cuda") * 2 - 1

torch.manual_seed(7)
N, F = ARGS["N"], ARGS["F"]
feats, points = inputs(N, F)
res = {"forward": bench(lambda: interp(feats, points))}
compiled, why = try_compile(interp, feats, points)
if compiled is not None:
    res["compiled"] = bench(lambda: compiled(feats, points))
else:
    res["compiled_error"] = why

g = torch.rand(N, F, device="cuda") * 2 - 1
fg = feats.clone().requires_grad_(True)
def fwdbwd():
    fg.grad = None
    interp(fg, points).backward(g)
res["fwdbwd"] = bench(fwdbwd)
pg = points.clone().requires_grad_(True)
def fwdbwd_points():
    fg.grad = None
    pg.grad = None
    interp(fg, pg).backward(g)
res["fwdbwd_points"] = bench(fwdbwd_points)
target = torch.rand(N, F, device="cuda")
def train():
    fg.grad = None
    pg.grad = None
    (0.5 * (interp(fg, pg) - target).square().sum()).backward()
res["train"] = bench(train)
del fg, pg, g, target

sweep = {}
for n, f in ARGS.get("sweep", []):
    fs, ps = inputs(n, f)
    sweep["%d,%d" % (n, f)] = bench(lambda: interp(fs, ps))
    del fs, ps
res["sweep"] = sweep

x = ARGS.get("xcheck")
if x:
    raw = open(x["in"], "rb").read()
    a = torch.frombuffer(bytearray(raw), dtype=torch.float32)
    nf = x["N"] * 8 * x["F"]
    fx = a[:nf].reshape(x["N"], 8, x["F"]).cuda()
    px = a[nf:].reshape(x["N"], 3).cuda()
    out = interp(fx, px).float().contiguous().cpu()
    with open(x["out"], "wb") as fo:
        fo.write(bytes(out.view(torch.uint8).reshape(-1).tolist()))
    res["xcheck"] = True
emit(res)
`

// TorchResult is what the PyTorch baseline measured.
type TorchResult struct {
	Forward       torch.Timing            `json:"forward"`
	Compiled      torch.Timing            `json:"compiled"`
	CompiledError string                  `json:"compiled_error"`
	FwdBwd        torch.Timing            `json:"fwdbwd"`
	FwdBwdPoints  torch.Timing            `json:"fwdbwd_points"`
	Train         torch.Timing            `json:"train"`
	Sweep         map[string]torch.Timing `json:"sweep"`
	XCheck        bool                    `json:"xcheck"`
	Torch         string                  `json:"torch"`
	Device        string                  `json:"device"`
	// Cross is PyTorch's forward on our inputs (XShape) against our float64 reference.
	Cross check.Result `json:"-"`
}

// XShape is the cross-check's shape: odd F, small enough to pass through a file.
var XShape = Shape{N: 1000, F: 37}

// RunTorch measures the PyTorch baselines at shape s and the forward at every sweep shape by the
// method m, and cross-checks its forward against our reference on XShape. When python3 has no torch
// with CUDA, the error says so and the lesson marks the columns unavailable.
func RunTorch(s Shape, sweep []Shape, m bench.Method) (*TorchResult, error) {
	if _, err := torch.Available(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "trilinear-xcheck-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in := NewInputs(XShape, 5, -1, 1)
	inPath, outPath := filepath.Join(dir, "in.f32"), filepath.Join(dir, "out.f32")
	if err := torch.WriteFloats(inPath, append(append([]float32{}, in.Feats...), in.Points...)); err != nil {
		return nil, err
	}
	var sw [][2]int
	for _, x := range sweep {
		sw = append(sw, [2]int{x.N, x.F})
	}
	args := map[string]any{"N": s.N, "F": s.F, "warmup": m.Warmup, "reps": m.Reps, "sweep": sw,
		"xcheck": map[string]any{"N": XShape.N, "F": XShape.F, "in": inPath, "out": outPath}}
	var r TorchResult
	if err := torch.Run(torchScript, args, &r, 10*time.Minute); err != nil {
		return nil, err
	}
	got, err := torch.ReadFloats(outPath, XShape.OutLen())
	if err != nil {
		return &r, fmt.Errorf("reading PyTorch's cross-check output: %w", err)
	}
	r.Cross = check.Compare(check.Float64s(got), Forward(XShape, widen(in.Feats), widen(in.Points)), ForwardTol)
	return &r, nil
}

package rwkv

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/torch"
)

// TorchExpression is the article's PyTorch forward, the baseline of every speedup.
const TorchExpression = "eps + F.conv1d(nn.ZeroPad2d((T-1,0,0,0))(k), w.unsqueeze(1), groups=C)"

// torchScript runs after helpers/torch's prelude (ARGS, bench, emit; TF32 off). It times the
// article's forward and forward+backward on torch.rand inputs at the table's shape, the forward over
// the T sweep, and, once, writes its forward output on inputs given in a file for the cross-check.
const torchScript = `
import torch.nn as nn
import torch.nn.functional as F

eps = ARGS["eps"]

def forward(w, k):
    T = k.shape[-1]
    pad = nn.ZeroPad2d((T - 1, 0, 0, 0))
    return eps + F.conv1d(pad(k), w.unsqueeze(1), groups=w.shape[0])

B, C, T = ARGS["B"], ARGS["C"], ARGS["T"]
torch.manual_seed(42)
w = torch.rand(C, T, device="cuda")
k = torch.rand(B, C, T, device="cuda")
res = {"forward": bench(lambda: forward(w, k))}

wg = w.clone().requires_grad_(True)
kg = k.clone().requires_grad_(True)
g = torch.rand(B, C, T, device="cuda")
def fwdbwd():
    wg.grad = None
    kg.grad = None
    forward(wg, kg).backward(g)
res["fwdbwd"] = bench(fwdbwd)

# torch.compile of the same expression: what a reader would try before writing a kernel. The first
# call compiles (not timed); a failure makes the column unavailable with its reason.
cf, why = try_compile(forward, w, k)
if cf is None:
    res["compile_forward_why"] = why
else:
    res["compile_forward"] = bench(lambda: cf(w, k))
cfb, why = try_compile(forward, wg, kg)
if cfb is not None:
    def cfwdbwd():
        wg.grad = None
        kg.grad = None
        cfb(wg, kg).backward(g)
    try:
        cfwdbwd()
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - the backward did not compile: report why
        cfb, why = None, "torch.compile backward failed here: %s: %s" % (type(e).__name__, (str(e).strip().splitlines() or [""])[0][:300])
if cfb is None:
    res["compile_fwdbwd_why"] = why
else:
    res["compile_fwdbwd"] = bench(cfwdbwd)
del wg, kg, g

sweep = {}
for t in ARGS.get("sweep", []):
    ws = torch.rand(C, t, device="cuda")
    ks = torch.rand(B, C, t, device="cuda")
    sweep[str(t)] = bench(lambda: forward(ws, ks))
    del ws, ks
res["sweep"] = sweep

x = ARGS.get("xcheck")
if x:
    raw = open(x["in"], "rb").read()
    a = torch.frombuffer(bytearray(raw), dtype=torch.float32)
    nw = x["C"] * x["T"]
    wx = a[:nw].reshape(x["C"], x["T"]).cuda()
    kx = a[nw:].reshape(x["B"], x["C"], x["T"]).cuda()
    out = forward(wx, kx).float().contiguous().cpu()
    with open(x["out"], "wb") as f:
        f.write(bytes(out.view(torch.uint8).reshape(-1).tolist()))
    res["xcheck"] = True
emit(res)
`

// TorchResult is what the PyTorch baseline measured.
type TorchResult struct {
	Forward torch.Timing            `json:"forward"`
	FwdBwd  torch.Timing            `json:"fwdbwd"`
	Sweep   map[string]torch.Timing `json:"sweep"`
	// CompileForward and CompileFwdBwd are torch.compile of the same expression (nil when it could
	// not compile here; the Why fields say why).
	CompileForward    *torch.Timing `json:"compile_forward"`
	CompileForwardWhy string        `json:"compile_forward_why"`
	CompileFwdBwd     *torch.Timing `json:"compile_fwdbwd"`
	CompileFwdBwdWhy  string        `json:"compile_fwdbwd_why"`
	XCheck            bool          `json:"xcheck"`
	Torch             string        `json:"torch"`
	Device            string        `json:"device"`
	// Cross is PyTorch's forward on our inputs (XShape) against our float64 reference.
	Cross check.Result `json:"-"`
}

// XShape is the cross-check's shape: small enough to pass through a file quickly, with the
// article's T.
var XShape = Shape{B: 4, C: 64, T: 768}

// RunTorch measures the PyTorch baseline at shape s (and the forward at the sweep's T, same B and
// C) by the method m, and cross-checks its forward output against our reference on XShape. When
// python3 has no torch with CUDA, the error says so and callers mark the column unavailable.
func RunTorch(s Shape, sweep []int, m bench.Method) (*TorchResult, error) {
	if _, err := torch.Available(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "rwkv-xcheck-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	w, k := Inputs(XShape, 7)
	in, out := filepath.Join(dir, "in.f32"), filepath.Join(dir, "out.f32")
	if err := torch.WriteFloats(in, append(append([]float32{}, w...), k...)); err != nil {
		return nil, err
	}
	args := map[string]any{"B": s.B, "C": s.C, "T": s.T, "eps": Eps, "warmup": m.Warmup, "reps": m.Reps, "sweep": sweep,
		"xcheck": map[string]any{"B": XShape.B, "C": XShape.C, "T": XShape.T, "in": in, "out": out}}
	var r TorchResult
	if err := torch.Run(torchScript, args, &r, 10*time.Minute); err != nil {
		return nil, err
	}
	got, err := torch.ReadFloats(out, XShape.Len())
	if err != nil {
		return &r, fmt.Errorf("reading PyTorch's cross-check output: %w", err)
	}
	r.Cross = check.Compare(check.Float64s(got), Forward(XShape, w, k, Eps), check.FP32)
	return &r, nil
}

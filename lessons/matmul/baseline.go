package matmul

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/torch"
)

// The PyTorch baselines, by their variant names in the records: cuBLAS through torch.matmul.
const (
	TorchFP32 = "cuBLAS fp32 (torch.matmul, TF32 off)"
	TorchTF32 = "cuBLAS TF32 (torch.matmul, TF32 on)"
	TorchFP16 = "cuBLAS fp16 (torch.matmul on half inputs)"
)

// TorchVariants maps the script's keys to the variant names and the dtypes of their products.
var TorchVariants = []struct{ Key, Name, DType string }{
	{"fp32", TorchFP32, "float32"},
	{"tf32", TorchTF32, "tf32"},
	{"fp16", TorchFP16, "fp16"},
}

// torchScript runs after helpers/torch's prelude (ARGS, bench, emit; TF32 off). It times
// torch.matmul in float32 with TF32 off and on, and on half inputs, at every shape asked; and, on
// the inputs given in files, writes the three products at the sampled elements for the error check.
const torchScript = `
import numpy as np

def timings(M, N, K):
    a = torch.rand(M, K, device="cuda") * 2 - 1
    b = torch.rand(K, N, device="cuda") * 2 - 1
    out = {}
    torch.backends.cuda.matmul.allow_tf32 = False
    out["fp32"] = bench(lambda: torch.matmul(a, b))
    torch.backends.cuda.matmul.allow_tf32 = True
    out["tf32"] = bench(lambda: torch.matmul(a, b))
    torch.backends.cuda.matmul.allow_tf32 = False
    ah, bh = a.half(), b.half()
    out["fp16"] = bench(lambda: torch.matmul(ah, bh))
    del a, b, ah, bh
    return out

res = {"times": {}}
for M, N, K in ARGS["shapes"]:
    res["times"]["%dx%dx%d" % (M, N, K)] = timings(M, N, K)

x = ARGS.get("xcheck")
if x:
    M, N, K = x["M"], x["N"], x["K"]
    a = torch.from_numpy(np.fromfile(x["a"], dtype=np.float32).reshape(M, K)).cuda()
    b = torch.from_numpy(np.fromfile(x["b"], dtype=np.float32).reshape(K, N)).cuda()
    idx = torch.from_numpy(np.fromfile(x["idx"], dtype=np.int64)).cuda()
    for key in ("fp32", "tf32", "fp16"):
        torch.backends.cuda.matmul.allow_tf32 = key == "tf32"
        c = torch.matmul(a.half(), b.half()).float() if key == "fp16" else torch.matmul(a, b)
        c.reshape(-1)[idx].cpu().numpy().astype(np.float32).tofile(x["out"] + "." + key)
    torch.backends.cuda.matmul.allow_tf32 = False
    res["xcheck"] = True
emit(res)
`

// TorchResult is what the PyTorch baseline measured: the timings per shape ("4096x4096x4096") and
// per variant key, and the error of each of its products against our float64 reference.
type TorchResult struct {
	Times  map[string]map[string]torch.Timing `json:"times"`
	XCheck bool                               `json:"xcheck"`
	Torch  string                             `json:"torch"`
	Device string                             `json:"device"`
	// Cross is each product (by key) on our inputs against our float64 reference at the step's
	// tolerance of its dtype.
	Cross map[string]check.Result `json:"-"`
}

// RunTorch times torch.matmul at every shape by the method m and, when p is not nil, runs it on
// p's inputs (passed through files) and compares its sampled outputs with p's float64 reference.
// When python3 has no torch with CUDA, the error says so and callers mark the column unavailable.
func RunTorch(shapes []Shape, p *Problem, m bench.Method) (*TorchResult, error) {
	if _, err := torch.Available(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "matmul-xcheck-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var dims [][3]int
	for _, s := range shapes {
		dims = append(dims, [3]int{s.M, s.N, s.K})
	}
	args := map[string]any{"warmup": m.Warmup, "reps": m.Reps, "shapes": dims}
	out := filepath.Join(dir, "c")
	if p != nil {
		fa, fb, fi := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "idx")
		if err := torch.WriteFloats(fa, p.A); err != nil {
			return nil, err
		}
		if err := torch.WriteFloats(fb, p.B); err != nil {
			return nil, err
		}
		idx := make([]byte, 8*len(p.Sample.Idx))
		for i, v := range p.Sample.Idx {
			binary.LittleEndian.PutUint64(idx[8*i:], uint64(v))
		}
		if err := os.WriteFile(fi, idx, 0o600); err != nil {
			return nil, err
		}
		args["xcheck"] = map[string]any{"M": p.Shape.M, "N": p.Shape.N, "K": p.Shape.K, "a": fa, "b": fb, "idx": fi, "out": out}
	}
	var r TorchResult
	if err := torch.Run(torchScript, args, &r, 10*time.Minute); err != nil {
		return nil, err
	}
	if p != nil && r.XCheck {
		r.Cross = map[string]check.Result{}
		for _, v := range TorchVariants {
			got, err := torch.ReadFloats(out+"."+v.Key, len(p.Sample.Idx))
			if err != nil {
				return &r, fmt.Errorf("reading PyTorch's %s product: %w", v.Key, err)
			}
			r.Cross[v.Key] = check.Compare(check.Float64s(got), p.want, Tolerance(v.DType, p.Shape.K))
		}
	}
	return &r, nil
}

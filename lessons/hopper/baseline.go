package hopper

import (
	"time"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/torch"
	"github.com/cudalessons/cudalessons/lessons/matmul"
)

// The vendor's 16-bit products the lesson measures beside its steps, by their keys in the PyTorch
// script and their names in the records: cuBLAS through torch.matmul, which on Hopper runs wgmma
// kernels. (cuBLAS in float32 and TF32, with its error on the lesson's inputs, comes from lesson 03's
// script: matmul.RunTorch.)
var Vendor = []struct{ Key, Name, DType string }{
	{"fp16", "cuBLAS fp16 (torch.matmul, half in and out)", FP16},
	{"bf16", "cuBLAS bf16 (torch.matmul, bfloat16 in and out)", BF16},
}

// VendorName is the record name of cuBLAS's product of dtype.
func VendorName(dtype string) string {
	for _, v := range Vendor {
		if v.DType == dtype {
			return v.Name
		}
	}
	return ""
}

// torchScript runs after helpers/torch's prelude (ARGS, bench, emit). It times torch.matmul at each
// shape in fp16 and bf16, inputs uniform in [-1, 1) like the lesson's.
const torchScript = `
res = {"times": {}}
for M, N, K in ARGS["shapes"]:
    a = torch.rand(M, K, device="cuda") * 2 - 1
    b = torch.rand(K, N, device="cuda") * 2 - 1
    out = {}
    for key, dt in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        x, y = a.to(dt), b.to(dt)
        out[key] = bench(lambda: torch.matmul(x, y))
        del x, y
    del a, b
    res["times"]["%dx%dx%d" % (M, N, K)] = out
emit(res)
`

// TorchTimes are cuBLAS's timings by shape ("4096x4096x4096") and key ("fp16", "bf16"), with
// PyTorch's version.
type TorchTimes struct {
	Times map[string]map[string]torch.Timing `json:"times"`
	Torch string                             `json:"torch"`
}

// RunTorch times cuBLAS at every shape by the method m. When python3 has no torch with CUDA, the
// error says so and callers mark the column unavailable.
func RunTorch(shapes []matmul.Shape, m bench.Method) (*TorchTimes, error) {
	if _, err := torch.Available(); err != nil {
		return nil, err
	}
	var dims [][3]int
	for _, s := range shapes {
		dims = append(dims, [3]int{s.M, s.N, s.K})
	}
	var r TorchTimes
	err := torch.Run(torchScript, map[string]any{"warmup": m.Warmup, "reps": m.Reps, "shapes": dims}, &r, 10*time.Minute)
	return &r, err
}

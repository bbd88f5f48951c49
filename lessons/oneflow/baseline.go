package oneflow

import (
	"fmt"
	"time"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/torch"
)

// torchScript measures the article's PyTorch expressions by the suite's method (the prelude's
// bench): torch.mul into a preallocated output, and nn.Upsample(scale_factor=2, mode="nearest")
// forward and its backward. The backward is the one kernel y.sum().backward() runs for the
// upsample, called directly with a random dy so that autograd's bookkeeping and the sum are not
// timed (the kernel's time does not depend on dy's values).
const torchScript = `
import torch.nn as nn
res = {"mul": [], "up": []}
dt = {"float32": torch.float32, "float16": torch.float16}
for c in ARGS.get("mul") or []:
    x = torch.rand(c["n"], device="cuda", dtype=dt[c["dtype"]])
    y = torch.rand(c["n"], device="cuda", dtype=dt[c["dtype"]])
    z = torch.empty_like(x)
    res["mul"].append(bench(lambda: torch.mul(x, y, out=z)))
    del x, y, z
m = nn.Upsample(scale_factor=2, mode="nearest")
for c in ARGS.get("up") or []:
    n, ch, h, w = c["shape"]
    x = torch.randn(n, ch, h, w, device="cuda", dtype=dt[c["dtype"]])
    fwd = bench(lambda: m(x))
    dy = torch.randn(n, ch, 2 * h, 2 * w, device="cuda", dtype=dt[c["dtype"]])
    def bwd():
        return torch.ops.aten.upsample_nearest2d_backward(dy, [2 * h, 2 * w], [n, ch, h, w], None, None)
    try:
        bwd()
        how = "aten.upsample_nearest2d_backward"
    except Exception:
        xg = x.clone().requires_grad_()
        yg = m(xg)
        def bwd():
            return torch.autograd.grad(yg, xg, dy, retain_graph=True)
        how = "autograd.grad"
    b = bench(bwd)
    b["how"] = how
    res["up"].append({"fwd": fwd, "bwd": b})
emit(res)
`

type torchMulCase struct {
	N     int    `json:"n"`
	DType string `json:"dtype"`
}

type torchUpCase struct {
	Shape [4]int `json:"shape"`
	DType string `json:"dtype"`
}

type torchTiming struct {
	torch.Timing
	How string `json:"how"`
}

type torchResult struct {
	Mul []torch.Timing `json:"mul"`
	Up  []struct {
		Fwd torchTiming `json:"fwd"`
		Bwd torchTiming `json:"bwd"`
	} `json:"up"`
	Torch string `json:"torch"`
}

// TorchBaselines measures torch.mul at each n and the upsample at each shape, in both dtypes, and
// adds the records ("PyTorch" variants). Without PyTorch it adds nothing and returns the reason,
// which the tables show as "unavailable".
func TorchBaselines(env *lab.Env, run *record.Run, mulN []int, shapes [][4]int, mulCase string) error {
	if _, err := torch.Available(); err != nil {
		return err
	}
	args := map[string]any{"warmup": env.Bench.Method.Warmup, "reps": env.Bench.Method.Reps}
	var mc []torchMulCase
	var uc []torchUpCase
	for _, d := range DTypes {
		for _, n := range mulN {
			mc = append(mc, torchMulCase{n, string(d)})
		}
		for _, s := range shapes {
			uc = append(uc, torchUpCase{s, string(d)})
		}
	}
	args["mul"], args["up"] = mc, uc
	var res torchResult
	if err := torch.Run(torchScript, args, &res, 10*time.Minute); err != nil {
		return err
	}
	if len(res.Mul) != len(mc) || len(res.Up) != len(uc) {
		return fmt.Errorf("the PyTorch baseline returned %d mul and %d upsample timings for %d and %d cases", len(res.Mul), len(res.Up), len(mc), len(uc))
	}
	run.Receipt.Torch = res.Torch
	timing := func(t torch.Timing) bench.Timing {
		return bench.Timing{Median: t.MedianMS, Min: t.MinMS, Max: t.MaxMS}
	}
	for i, c := range mc {
		d := DType(c.DType)
		rec := record.Record{Case: mulCase, Variant: "PyTorch torch.mul", Kind: "baseline", DType: c.DType, Shape: fmt.Sprintf("n=%d", c.N), Size: int64(c.N),
			Note: "torch " + res.Torch + ", torch.mul(x, y, out=z)"}
		run.Add(env.WithTiming(rec, MulWork(d, c.N), timing(res.Mul[i])))
	}
	for i, c := range uc {
		d := DType(c.DType)
		in := c.Shape[0] * c.Shape[1] * c.Shape[2] * c.Shape[3]
		for _, dir := range []string{Forward, Backward} {
			t, note := res.Up[i].Fwd, "nn.Upsample(scale_factor=2, mode=\"nearest\")(x)"
			if dir == Backward {
				t, note = res.Up[i].Bwd, "the backward of y.sum(), timed alone: "+res.Up[i].Bwd.How+" with a random dy"
			}
			rec := record.Record{Case: "upsample " + dir, Variant: "PyTorch", Kind: "baseline", DType: c.DType, Shape: fmtShape(c.Shape), Size: int64(in),
				Note: "torch " + res.Torch + ", " + note}
			run.Add(env.WithTiming(rec, UpWork(d, c.Shape, dir), timing(t.Timing)))
		}
	}
	return nil
}

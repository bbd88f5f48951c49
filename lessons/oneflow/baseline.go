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
    r = bench(lambda: torch.mul(x, y, out=z))
    if c.get("compile"):
        cm, why = try_compile(lambda a, b: a * b, x, y)
        r["compiled"] = bench(lambda: cm(x, y)) if cm is not None else {"why": why}
    res["mul"].append(r)
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
    if c.get("compile"):
        cf, why = try_compile(lambda a: m(a), x)
        fwd["compiled"] = bench(lambda: cf(x)) if cf is not None else {"why": why}
        cb, why = try_compile(lambda g: torch.ops.aten.upsample_nearest2d_backward(g, [2 * h, 2 * w], [n, ch, h, w], None, None), dy)
        b["compiled"] = bench(lambda: cb(dy)) if cb is not None else {"why": why}
    res["up"].append({"fwd": fwd, "bwd": b})
emit(res)
`

type torchMulCase struct {
	N       int    `json:"n"`
	DType   string `json:"dtype"`
	Compile bool   `json:"compile"` // also time torch.compile of x * y
}

// compiledTiming is torch.compile's timing of a case, or why it is unavailable.
type compiledTiming struct {
	torch.Timing
	Why string `json:"why"`
}

// TorchCompile is the variant name of torch.compile's records.
const TorchCompile = "torch.compile"

type torchUpCase struct {
	Shape   [4]int `json:"shape"`
	DType   string `json:"dtype"`
	Compile bool   `json:"compile"` // also time torch.compile (at the article's shape)
}

type torchTiming struct {
	torch.Timing
	How      string          `json:"how"`
	Compiled *compiledTiming `json:"compiled"`
}

type torchMulTiming struct {
	torch.Timing
	Compiled *compiledTiming `json:"compiled"`
}

type torchResult struct {
	Mul []torchMulTiming `json:"mul"`
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
			mc = append(mc, torchMulCase{n, string(d), n == MulN})
		}
		for _, s := range shapes {
			uc = append(uc, torchUpCase{s, string(d), s == ArticleShape})
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
		run.Add(env.WithTiming(rec, MulWork(d, c.N), timing(res.Mul[i].Timing)))
		if c.Compile {
			cr := rec
			cr.Variant, cr.Note = TorchCompile, "torch "+res.Torch+", torch.compile(lambda a, b: a * b), compiled before timing"
			addCompiled(env, run, cr, MulWork(d, c.N), res.Mul[i].Compiled)
		}
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
			cr := rec
			cr.Variant, cr.Note = TorchCompile, "torch "+res.Torch+", torch.compile of nn.Upsample(scale_factor=2, mode=\"nearest\"), compiled before timing"
			if dir == Backward {
				cr.Note = "torch " + res.Torch + ", torch.compile of aten.upsample_nearest2d_backward(dy), compiled before timing"
			}
			if c.Compile {
				addCompiled(env, run, cr, UpWork(d, c.Shape, dir), t.Compiled)
			}
		}
	}
	return nil
}

// addCompiled adds torch.compile's record of a case, or a record that says why it is unavailable
// (no time: the tables show "unavailable" and the note).
func addCompiled(env *lab.Env, run *record.Run, rec record.Record, w bench.Work, c *compiledTiming) {
	switch {
	case c == nil:
		rec.Note = "unavailable: the baseline script did not time torch.compile"
		run.Add(rec)
	case c.Why != "" || c.MedianMS <= 0:
		rec.Note = "unavailable: " + c.Why
		run.Add(rec)
	default:
		run.Add(env.WithTiming(rec, w, bench.Timing{Median: c.MedianMS, Min: c.MinMS, Max: c.MaxMS}))
	}
}

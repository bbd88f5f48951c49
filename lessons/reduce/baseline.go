package reduce

import (
	"fmt"
	"time"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/torch"
)

// torchScript measures PyTorch on the lesson's problems by the suite's method (the prelude's
// bench): torch.softmax(x, dim=1) and F.layer_norm over the given normalised shape, eager and
// through torch.compile (the prelude's try_compile; dynamo is reset before each shape so that no
// shape is compiled as a dynamic one), and for layer norm the backward: eager autograd.grad of y
// alone, and forward+backward eager and compiled.
const torchScript = `
import torch.nn.functional as F
import torch._dynamo
dt = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
out = {"softmax": [], "layernorm": []}

def compiled(fn, *args):
    torch._dynamo.reset()
    return try_compile(fn, *args)

for c in ARGS.get("softmax") or []:
    r = {"eager": None, "compiled": None, "why": None}
    x = comp = None
    try:
        # drawn in place: KernelBench's 4096 x 393216 is 6.4 GB, and x * 8 - 4 would hold three
        x = torch.empty(c["rows"], c["cols"], device="cuda", dtype=dt[c["dtype"]]).uniform_(-4, 4)
        sm = lambda t: torch.softmax(t, dim=1)
        r["eager"] = bench(lambda: sm(x))
        comp, why = compiled(sm, x) if c["compile"] else (None, "not measured at this point of the sweep (each shape costs a compilation)")
        r["compiled"] = bench(lambda: comp(x)) if comp else None
        r["why"] = why
    except torch.cuda.OutOfMemoryError as e:
        r["why"] = "out of device memory at (%d, %d): %s" % (c["rows"], c["cols"], str(e).splitlines()[0][:160])
    out["softmax"].append(r)
    del x, comp
    torch.cuda.empty_cache()

for c in ARGS.get("layernorm") or []:
    shape = c["shape"]
    norm = shape[1:]
    x = torch.rand(shape, device="cuda") * 2 - 1
    w = torch.rand(norm, device="cuda") + 0.5
    b = torch.rand(norm, device="cuda") - 0.5
    ln = lambda x, w, b: F.layer_norm(x, norm, w, b, 1e-5)
    r = {"eager": bench(lambda: ln(x, w, b))}
    comp, why = compiled(ln, x, w, b) if c["compile"] else (None, "not measured at this point of the sweep (each shape costs a compilation)")
    r["compiled"] = bench(lambda: comp(x, w, b)) if comp else None
    r["why"] = why
    if c.get("backward"):
        xg, wg, bg = x.clone().requires_grad_(), w.clone().requires_grad_(), b.clone().requires_grad_()
        y = ln(xg, wg, bg)
        dy = torch.rand_like(y) * 2 - 1
        r["bwd_eager"] = bench(lambda: torch.autograd.grad(y, (xg, wg, bg), dy, retain_graph=True))
        r["fwdbwd_eager"] = bench(lambda: torch.autograd.grad(ln(xg, wg, bg), (xg, wg, bg), dy))
        torch._dynamo.reset()
        try:
            cl = torch.compile(ln)
            fb = lambda: torch.autograd.grad(cl(xg, wg, bg), (xg, wg, bg), dy)
            fb()
            torch.cuda.synchronize()
            r["fwdbwd_compiled"] = bench(fb)
        except Exception as e:  # noqa: BLE001
            r["fwdbwd_compiled"] = None
            r["why_bwd"] = "torch.compile failed here: %s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])
        del xg, wg, bg, y, dy
    out["layernorm"].append(r)
    del x, w, b, comp
    torch.cuda.empty_cache()
emit(out)
`

// SoftmaxCase is a softmax baseline to measure: its shape and dtype, and the case its records go to.
type SoftmaxCase struct {
	Case       string `json:"-"`
	Rows, Cols int
	DType      DType
	Compile    bool // also measure torch.compile (a compilation per shape)
}

// LNCase is a layer norm baseline: N samples of the normalised shape Norm (one dimension or the
// article's three), with or without the backward.
type LNCase struct {
	Case     string `json:"-"`
	N        int
	Norm     []int
	Backward bool
	Compile  bool
}

type torchResult struct {
	Softmax []struct {
		Eager    *torch.Timing `json:"eager"`
		Compiled *torch.Timing `json:"compiled"`
		Why      *string       `json:"why"`
	} `json:"softmax"`
	LayerNorm []struct {
		Eager          torch.Timing  `json:"eager"`
		Compiled       *torch.Timing `json:"compiled"`
		Why            *string       `json:"why"`
		BwdEager       *torch.Timing `json:"bwd_eager"`
		FwdBwdEager    *torch.Timing `json:"fwdbwd_eager"`
		FwdBwdCompiled *torch.Timing `json:"fwdbwd_compiled"`
		WhyBwd         *string       `json:"why_bwd"`
	} `json:"layernorm"`
	Torch string `json:"torch"`
}

// Baseline variant names.
const (
	Eager    = "PyTorch eager"
	Compiled = "torch.compile"
)

// TorchBaselines measures PyTorch on the cases and adds the records. Without PyTorch it adds one
// "unavailable" record with the reason and returns it; a torch.compile that fails adds an
// unavailable record for that column only.
func TorchBaselines(env *lab.Env, run *record.Run, sm []SoftmaxCase, ln []LNCase) error {
	if _, err := torch.Available(); err != nil {
		run.Add(record.Record{Case: "unavailable", Variant: "PyTorch", Kind: "baseline", Note: err.Error()})
		return err
	}
	type smArg struct {
		Rows    int    `json:"rows"`
		Cols    int    `json:"cols"`
		DType   string `json:"dtype"`
		Compile bool   `json:"compile"`
	}
	type lnArg struct {
		Shape    []int `json:"shape"`
		Backward bool  `json:"backward"`
		Compile  bool  `json:"compile"`
	}
	var sa []smArg
	for _, c := range sm {
		sa = append(sa, smArg{c.Rows, c.Cols, string(c.DType), c.Compile})
	}
	var la []lnArg
	for _, c := range ln {
		la = append(la, lnArg{append([]int{c.N}, c.Norm...), c.Backward, c.Compile})
	}
	args := map[string]any{"warmup": env.Bench.Method.Warmup, "reps": env.Bench.Method.Reps, "softmax": sa, "layernorm": la}
	var res torchResult
	if err := torch.Run(torchScript, args, &res, 15*time.Minute); err != nil {
		run.Add(record.Record{Case: "unavailable", Variant: "PyTorch", Kind: "baseline", Note: err.Error()})
		return err
	}
	if len(res.Softmax) != len(sm) || len(res.LayerNorm) != len(ln) {
		return fmt.Errorf("the PyTorch baseline returned %d softmax and %d layer norm results for %d and %d cases", len(res.Softmax), len(res.LayerNorm), len(sm), len(ln))
	}
	run.Receipt.Torch = res.Torch
	timing := func(t torch.Timing) bench.Timing { return bench.Timing{Median: t.MedianMS, Min: t.MinMS, Max: t.MaxMS} }
	add := func(c, variant, dtype, shp string, size int64, w bench.Work, t *torch.Timing, why *string, note string) {
		rec := record.Record{Case: c, Variant: variant, Kind: "baseline", DType: dtype, Shape: shp, Size: size, Note: "torch " + res.Torch + ", " + note}
		if t == nil {
			rec.Note = "unavailable: "
			if why != nil {
				rec.Note += *why
			}
			run.Add(rec)
			return
		}
		run.Add(env.WithTiming(rec, w, timing(*t)))
	}
	for i, c := range sm {
		r := res.Softmax[i]
		w := SoftmaxWork(c.DType, c.Rows, c.Cols)
		add(c.Case, Eager, string(c.DType), shape(c.Rows, c.Cols), int64(c.Cols), w, r.Eager, r.Why, "torch.softmax(x, dim=1)")
		if c.Compile {
			add(c.Case, Compiled, string(c.DType), shape(c.Rows, c.Cols), int64(c.Cols), w, r.Compiled, r.Why, "torch.compile(torch.softmax(x, dim=1))")
		}
	}
	for i, c := range ln {
		r := res.LayerNorm[i]
		m := 1
		for _, d := range c.Norm {
			m *= d
		}
		shp := lnTorchShape(c.N, c.Norm)
		add(c.Case, Eager, "float32", shp, int64(m), LNWork(c.N, m), &r.Eager, nil, "F.layer_norm(x, x.shape[1:], w, b)")
		if c.Compile {
			add(c.Case, Compiled, "float32", shp, int64(m), LNWork(c.N, m), r.Compiled, r.Why, "torch.compile(F.layer_norm)")
		}
		if c.Backward {
			add(c.Case+" backward", Eager, "float32", shp, int64(m), LNBackwardWork(c.N, m), r.BwdEager, nil, "autograd.grad(y, (x, w, b), dy): the backward alone")
			add(c.Case+" forward+backward", Eager, "float32", shp, int64(m), LNForwardBackwardWork(c.N, m), r.FwdBwdEager, nil, "F.layer_norm then autograd.grad")
			add(c.Case+" forward+backward", Compiled, "float32", shp, int64(m), LNForwardBackwardWork(c.N, m), r.FwdBwdCompiled, r.WhyBwd, "torch.compile(F.layer_norm) then autograd.grad (AOTAutograd's compiled backward)")
		}
	}
	return nil
}

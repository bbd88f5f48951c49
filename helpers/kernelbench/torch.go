package kernelbench

import (
	"fmt"
	"path/filepath"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/torch"
)

// PyTorch's TF32 settings for the reference: its defaults (TF32 off for matmul, on for cuDNN's
// convolutions), which KernelBench leaves as they are. The suite's prelude turns both off for the
// lessons' baselines; this script sets them back, and every receipt says which ran.
const (
	MatmulTF32 = false
	CudnnTF32  = true
)

// script runs after helpers/torch's prelude (ARGS, bench, emit, try_compile). It builds the
// reference model as KernelBench's file defines it (the module names its state_dict after the
// file's attributes), loads our parameters into it, runs it on each trial's input slices (written
// by Go as raw float32) and writes its outputs back; then it times the model at the full shape on
// inputs it draws from the problem's distributions, eager and under torch.compile, under
// torch.no_grad as KernelBench times it.
const script = `
import numpy as np
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = ARGS["matmul_tf32"]
torch.backends.cudnn.allow_tf32 = ARGS["cudnn_tf32"]
P = ARGS["problem"]
OP, T = P["op"], P["tensors"]
S = P.get("args") or {}

# KernelBench's elementwise problems, each written as its file's forward writes it; the scalars its
# file passes (negative_slope, alpha, min_val, max_val, s) come from the Go data.
UNARY = {
    "relu": lambda x: torch.relu(x),
    "leaky_relu": lambda x: torch.nn.functional.leaky_relu(x, negative_slope=S["negative_slope"]),
    "sigmoid": lambda x: torch.sigmoid(x),
    "tanh": lambda x: torch.tanh(x),
    "swish": lambda x: x * torch.sigmoid(x),
    "gelu": lambda x: torch.nn.functional.gelu(x),
    "selu": lambda x: torch.selu(x),
    "hardsigmoid": lambda x: torch.nn.functional.hardsigmoid(x),
    "softplus": lambda x: torch.nn.functional.softplus(x),
    "softsign": lambda x: x / (1 + torch.abs(x)),
    "elu": lambda x: torch.nn.functional.elu(x, alpha=S["alpha"]),
    "hardtanh": lambda x: torch.nn.functional.hardtanh(x, min_val=S["min_val"], max_val=S["max_val"]),
    "matrix_scalar_mul": lambda A, s: A * s,
}
# forward's inputs that are Python scalars, after the tensors: L1-5's s.
EXTRA = [S["s"]] if OP == "matrix_scalar_mul" else []
LINEAR = ("gemm_multiply_leakyrelu", "gemm_relu_divide", "gemm_add_relu")


def load(path, shape):
    return torch.from_numpy(np.fromfile(path, dtype="<f4").reshape(shape)).cuda()


# The reductions and norms over dim 1 (problems_reductions.go), as KernelBench's files write them.
RED = {
    "sum_dim": lambda x: torch.sum(x, dim=1, keepdim=True),
    "mean_dim": lambda x: torch.mean(x, dim=1),
    "max_dim": lambda x: torch.max(x, dim=1)[0],
    "min_dim": lambda x: torch.min(x, dim=1)[0],
    "argmax_dim": lambda x: torch.argmax(x, dim=1),
    "argmin_dim": lambda x: torch.argmin(x, dim=1),
    "log_softmax": lambda x: torch.log_softmax(x, dim=1),
    "rms_norm": lambda x: x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + P.get("eps", 0)),
    "l1_norm": lambda x: x / torch.mean(torch.abs(x), dim=1, keepdim=True),
    "l2_norm": lambda x: x / torch.norm(x, p=2, dim=1, keepdim=True),
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_name = ""
        if OP == "layernorm":
            self.ln = nn.LayerNorm(tuple(P["out"][-P["norm_dims"]:]), eps=P["eps"])
        elif OP in ("conv2d", "conv2d_relu_biasadd"):
            w = [t for t in T if t["name"].endswith("weight")][0]
            self.conv_name = w["name"][: -len(".weight")]
            k, c, r, _ = w["shape"]
            cv = P["conv"]
            setattr(self, self.conv_name, nn.Conv2d(c, k, r, stride=cv["stride"], padding=cv["padding"], bias=cv["bias"]))
            if OP == "conv2d_relu_biasadd":
                self.bias = nn.Parameter(torch.empty([t for t in T if t["name"] == "bias"][0]["shape"]))
        elif OP in LINEAR:
            w = [t for t in T if t["name"].endswith("weight")][0]
            self.lin_name = w["name"][: -len(".weight")]
            out_f, in_f = w["shape"]
            has_bias = any(t["name"] == self.lin_name + ".bias" for t in T)
            setattr(self, self.lin_name, nn.Linear(in_f, out_f, bias=has_bias))
            if OP == "gemm_add_relu":
                self.bias = nn.Parameter(torch.empty([t for t in T if t["name"] == "bias"][0]["shape"]))

    def forward(self, *xs):
        if OP in UNARY:
            return UNARY[OP](*xs)
        if OP == "matmul":
            return torch.matmul(xs[0], xs[1])
        if OP == "bmm":
            return torch.bmm(xs[0], xs[1])
        if OP == "matmul_ta":
            return torch.matmul(xs[0].T, xs[1])
        if OP == "matmul_tb":
            return torch.matmul(xs[0], xs[1].T)
        if OP == "matmul_tt":
            return torch.matmul(xs[0].T, xs[1].T)
        if OP in LINEAR:
            y = getattr(self, self.lin_name)(xs[0])
            if OP == "gemm_multiply_leakyrelu":
                return nn.functional.leaky_relu(y * S["multiplier"], negative_slope=S["negative_slope"])
            if OP == "gemm_relu_divide":
                return torch.relu(y) / S["divisor"]
            return torch.relu(y + self.bias)
        if OP == "softmax":
            return torch.softmax(xs[0], dim=1)
        if OP in RED:
            return RED[OP](xs[0])
        if OP == "layernorm":
            return self.ln(xs[0])
        y = getattr(self, self.conv_name)(xs[0])
        if OP == "conv2d_relu_biasadd":
            y = torch.relu(y)
            y = y + self.bias
        return y


model = Model().cuda().eval()
model.load_state_dict({t["name"]: load(ARGS["params"][t["name"]], t["shape"]) for t in T if t["param"]})
res = {"trials": 0}
with torch.no_grad():
    for tr in ARGS["trials"]:
        xs = [load(path, shape) for path, shape in zip(tr["inputs"], tr["shapes"])] + EXTRA
        model(*xs).float().cpu().numpy().astype("<f4").tofile(tr["out"])
        res["trials"] += 1
        del xs
    if ARGS["time"]:
        def draw(t):
            if t["dist"] == "torch.randn":
                return torch.randn(t["shape"], device="cuda")
            return torch.rand(t["shape"], device="cuda")

        xs = [draw(t) for t in T if not t["param"]] + EXTRA
        res["eager"] = bench(lambda: model(*xs))
        compiled, why = try_compile(model, *xs)
        if compiled is None:
            res["compile_error"] = why
        else:
            res["compile"] = bench(lambda: compiled(*xs))
res["tf32"] = {"matmul": torch.backends.cuda.matmul.allow_tf32, "cudnn": torch.backends.cudnn.allow_tf32}
emit(res)
`

// Script is the PyTorch side of a problem (it runs after helpers/torch's prelude), for a reader who
// wants to see what the baseline and the reference are.
func Script() string { return script }

// TorchFunc runs a script after helpers/torch's prelude with args as JSON on stdin and decodes the
// JSON it emits into result: torch.Run with a time limit, or a fake in tests.
type TorchFunc func(script string, args, result any) error

// torchTrial is one trial's files: the input slices (forward's inputs in order, the first cut to
// its slices), their shapes, and where the script writes the model's output.
type torchTrial struct {
	Inputs []string `json:"inputs"`
	Shapes [][]int  `json:"shapes"`
	Out    string   `json:"out"`
}

// torchArgs are the script's ARGS.
type torchArgs struct {
	Problem    Problem           `json:"problem"`
	Params     map[string]string `json:"params"`
	Trials     []torchTrial      `json:"trials"`
	Time       bool              `json:"time"`
	Warmup     int               `json:"warmup"`
	Reps       int               `json:"reps"`
	MatmulTF32 bool              `json:"matmul_tf32"`
	CudnnTF32  bool              `json:"cudnn_tf32"`
}

// torchResult is what the script emits.
type torchResult struct {
	Trials       int             `json:"trials"`
	Eager        *torch.Timing   `json:"eager"`
	Compile      *torch.Timing   `json:"compile"`
	CompileError string          `json:"compile_error"`
	TF32         map[string]bool `json:"tf32"`
	Torch        string          `json:"torch"`
	Device       string          `json:"device"`
}

// torchFiles names and writes the files of a problem's exchange with the script in dir.
type torchFiles struct {
	dir  string
	args torchArgs
}

func newTorchFiles(dir string, p Problem, m bench.Method) *torchFiles {
	return &torchFiles{dir: dir, args: torchArgs{Problem: p, Params: map[string]string{}, Time: true,
		Warmup: m.Warmup, Reps: m.Reps, MatmulTF32: MatmulTF32, CudnnTF32: CudnnTF32}}
}

// writeParams writes the parameters (once).
func (f *torchFiles) writeParams(p Problem, params [][]float32) error {
	for i, t := range p.Tensors {
		if !t.Param {
			continue
		}
		path := filepath.Join(f.dir, fmt.Sprintf("param%d", i))
		if err := torch.WriteFloats(path, params[i]); err != nil {
			return fmt.Errorf("writing %s's %s for PyTorch: %w", p.ID(), t.Name, err)
		}
		f.args.Params[t.Name] = path
	}
	return nil
}

// writeTrial writes trial t's input slices (sliced: SliceInputs) of n batch slices.
func (f *torchFiles) writeTrial(p Problem, t int, sliced [][]float32, n int) error {
	tr := torchTrial{Out: filepath.Join(f.dir, fmt.Sprintf("trial%d.ref", t))}
	for i, ts := range p.Tensors {
		if ts.Param {
			continue
		}
		path := filepath.Join(f.dir, fmt.Sprintf("trial%d.in%d", t, i))
		if err := torch.WriteFloats(path, sliced[i]); err != nil {
			return fmt.Errorf("writing %s trial %d's %s for PyTorch: %w", p.ID(), t, ts.Name, err)
		}
		shape := p.SlicedShape(i, n)
		tr.Inputs, tr.Shapes = append(tr.Inputs, path), append(tr.Shapes, shape)
	}
	f.args.Trials = append(f.args.Trials, tr)
	return nil
}

// output reads the reference model's output of trial t (n batch slices).
func (f *torchFiles) output(p Problem, t, n int) ([]float32, error) {
	if t >= len(f.args.Trials) {
		return nil, fmt.Errorf("%s: no PyTorch trial %d", p.ID(), t)
	}
	out, err := torch.ReadFloats(f.args.Trials[t].Out, n*p.OutPer())
	if err != nil {
		return nil, fmt.Errorf("reading PyTorch's output of %s trial %d: %w", p.ID(), t, err)
	}
	return out, nil
}

package hostile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cudalessons/cudalessons/helpers/torch"
)

// torchDriver runs each case's PyTorch op (the functions defined before it, FNS by op name) on the
// case's inputs, float32 on CUDA, and writes each output as raw float32 beside them.
const torchDriver = `
import os
import numpy as np

errors = {}
for c in ARGS["cases"]:
    try:
        I = {x["name"]: torch.from_numpy(np.fromfile(x["file"], dtype="<f4").reshape(x["shape"])).cuda() for x in c["inputs"]}
        out = FNS[c["op"]](I, c)
        for name, t in out.items():
            t.detach().float().contiguous().cpu().numpy().astype("<f4").tofile(os.path.join(ARGS["dir"], c["id"] + "_" + name + ".out"))
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - a case PyTorch refuses is that case's column
        errors[c["id"]] = "%s: %s" % (type(e).__name__, (str(e).strip().splitlines() or [""])[0][:300])
emit({"errors": errors})
`

type torchInput struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
	File  string `json:"file"`
}

type torchCase struct {
	ID     string       `json:"id"`
	Op     string       `json:"op"`
	Dims   []int        `json:"dims"`
	Axes   int          `json:"axes"`
	Inputs []torchInput `json:"inputs"`
}

// torchScript is the ops' PyTorch functions, then the driver.
func torchScript(cat []*Op) string {
	var b strings.Builder
	b.WriteString("FNS = {}\n")
	for i, op := range cat {
		fmt.Fprintf(&b, "\n\ndef fn%d(I, META):\n", i)
		for _, l := range strings.Split(strings.TrimSpace(op.Torch), "\n") {
			b.WriteString("    " + l + "\n")
		}
		fmt.Fprintf(&b, "\n\nFNS[%q] = fn%d\n", op.Name, i)
	}
	return b.String() + torchDriver
}

// Torch is PyTorch's column of a run: the outputs of its op on every case's inputs, or why there
// are none.
type Torch struct {
	Version string // PyTorch's version, "" when unavailable
	Why     string // why the column is unavailable
	dir     string
	errors  map[string]string
}

// RunTorch runs PyTorch's op on the inputs of every case in one python process, through dir (the
// inputs and outputs as raw float32 files). Without torch and CUDA it returns a Torch that says
// why, and no error.
func RunTorch(cat []*Op, cases []Case, dir string, timeout time.Duration) (*Torch, error) {
	v, err := torch.Available()
	if err != nil {
		return &Torch{Why: err.Error()}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var tcs []torchCase
	for i, c := range cases {
		tc := torchCase{ID: c.ID(i), Op: c.Op.Name, Dims: c.Shape.Dims, Axes: c.Shape.Axes}
		for _, in := range c.Op.Inputs(c.Shape, c.Dist, c.Seed) {
			f := filepath.Join(dir, tc.ID+"_"+in.Name+".in")
			if err := torch.WriteFloats(f, in.Data); err != nil {
				return nil, err
			}
			tc.Inputs = append(tc.Inputs, torchInput{Name: in.Name, Shape: in.Shape, File: f})
		}
		tcs = append(tcs, tc)
	}
	var res struct {
		Errors map[string]string `json:"errors"`
		Torch  string            `json:"torch"`
	}
	args := map[string]any{"cases": tcs, "dir": dir}
	if err := torch.Run(torchScript(cat), args, &res, timeout); err != nil {
		return nil, err
	}
	for _, tc := range tcs {
		for _, in := range tc.Inputs {
			os.Remove(in.File)
		}
	}
	return &Torch{Version: v, dir: dir, errors: res.Errors}, nil
}

// Outputs are PyTorch's outputs of case id (names as the op's Outputs, n values each), or nil and
// the reason PyTorch has none.
func (t *Torch) Outputs(id string, names []string, n map[string]int) (map[string][]float32, string) {
	if t == nil || t.Version == "" {
		return nil, Unavailable
	}
	if msg, ok := t.errors[id]; ok {
		return nil, "PyTorch raised " + msg
	}
	out := map[string][]float32{}
	for _, name := range names {
		f := filepath.Join(t.dir, id+"_"+name+".out")
		v, err := torch.ReadFloats(f, n[name])
		if err != nil {
			return nil, "reading PyTorch's output: " + err.Error()
		}
		os.Remove(f)
		out[name] = v
	}
	return out, ""
}

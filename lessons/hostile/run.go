package hostile

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// Options tune Run.
type Options struct {
	Seed  uint64   // the run's seed: every case's inputs are drawn from it (recorded)
	Short bool     // only the shapes marked Short
	Ops   []string // the ops to run by name (all when empty)
	// Scratch is the folder for PyTorch's inputs and outputs (a temporary folder when empty).
	Scratch string
	// NoTorch leaves PyTorch's column out (unavailable) even where torch is installed.
	NoTorch bool
	Log     io.Writer // one line per case as it finishes, when not nil
}

// launchFailure reports whether an op's error is a failed launch (the GPU's), not a refusal.
func launchFailure(err error) bool {
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"illegal", "unspecified launch", "misaligned address", "launch failed", "launch timeout", "cuda_error", "gave up waiting"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// Run feeds every case of the catalogue to its op on env's GPU and judges it; the report carries
// env's receipt, the project's commit and the seed.
func Run(env *lab.Env, opts Options) (*Report, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("hostile inputs: running the ops needs a GPU (%s)", env.Mode)
	}
	start := time.Now()
	cat := Catalogue()
	for _, name := range opts.Ops {
		if _, err := OpByName(name); err != nil {
			return nil, err
		}
	}
	cases := Cases(cat, opts.Ops, opts.Short, opts.Seed)
	rep := &Report{Receipt: env.Receipt, Commit: record.ProjectCommit(), Seed: opts.Seed, Short: opts.Short, Go: runtime.Version()}
	for _, op := range cat {
		if len(opts.Ops) == 0 || contains(opts.Ops, op.Name) {
			rep.Ops = append(rep.Ops, *op)
		}
	}
	rep.Dists = append(rep.Dists, Dists...)
	tr := &Torch{Why: "left out (NoTorch)"}
	if !opts.NoTorch {
		dir := opts.Scratch
		if dir == "" {
			tmp, err := os.MkdirTemp("", "hostile-*")
			if err != nil {
				return nil, err
			}
			defer os.RemoveAll(tmp)
			dir = tmp
		}
		var err error
		if tr, err = RunTorch(cat, cases, filepath.Join(dir, "torch"), 8*time.Minute); err != nil {
			tr = &Torch{Why: "PyTorch's run failed: " + err.Error()}
		}
	}
	rep.Torch = tr.Version
	if tr.Version == "" {
		rep.Torch = Unavailable + ": " + tr.Why
	}
	for i, c := range cases {
		row := runCase(env, env.Device(), c, c.ID(i), tr)
		if opts.Log != nil {
			fmt.Fprintln(opts.Log, row.Line())
		}
		rep.Rows = append(rep.Rows, row)
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// runCase runs one case on env (whose GPU is dev) and judges it.
func runCase(env *lab.Env, dev gpu.DeviceInfo, c Case, id string, tr *Torch) Row {
	op := c.Op
	row := Row{ID: id, Op: op.Name, Lesson: op.Lesson, Dist: c.Dist.Name, Shape: c.Shape.String(), Dims: c.Shape.Dims,
		Offset: c.Shape.Offset, Note: c.Shape.Note, Seed: c.Seed}
	in := op.Inputs(c.Shape, c.Dist, c.Seed)
	row.Predicted = op.Predict(dev, c.Shape, in)
	got, step, err := op.Run(env, c.Shape, in)
	row.Step = step
	if err != nil {
		switch {
		case launchFailure(err):
			row.Verdict, row.Why = Fail, "the launch failed: "+err.Error()
		case strings.TrimSpace(err.Error()) == "":
			row.Verdict, row.Why = Fail, "refused without a reason"
		default:
			row.Verdict, row.Why = Refused, err.Error()
		}
		return row
	}
	refs := op.Reference(c.Shape, in, step)
	n := map[string]int{}
	for _, r := range refs {
		n[r.Name] = len(r.Want)
	}
	touts, why := tr.Outputs(id, op.Outputs, n)
	row.Verdict = Pass
	var whys, differs []string
	for _, r := range refs {
		r.Got = got[r.Name]
		var t []float32
		if touts != nil {
			t = touts[r.Name]
		}
		j := JudgeOutput(r, t)
		if !j.OK {
			row.Verdict = Fail
			whys = append(whys, r.Name+": "+j.Why)
		}
		if touts != nil && j.Torch != "pass" {
			differs = append(differs, r.Name+": "+strings.TrimPrefix(j.Torch, "differs: "))
		}
		row.Outputs = append(row.Outputs, j.finite())
	}
	switch {
	case touts == nil:
		row.Torch = why
	case len(differs) == 0:
		row.Torch = "pass"
	default:
		row.Torch = "differs: " + strings.Join(differs, "; ")
	}
	row.Why = strings.Join(whys, "; ")
	return row
}

// finite is j as the record keeps it: every non-finite number as JSON can hold it (an error too
// large to measure as the largest float64; the judgement stays as it was), and the tolerance by its
// name and bounds, without the derivation each row would repeat.
func (j Judged) finite() Judged {
	var fs []*float64
	if j.Ref != nil {
		r := *j.Ref
		r.Tol.Why = ""
		j.Ref = &r
		fs = append(fs, &r.RelL2, &r.RMS, &r.MaxAbs)
	}
	if j.Bound != nil {
		b := *j.Bound
		j.Bound = &b
		fs = append(fs, &b.Worst)
	}
	for _, f := range fs {
		if math.IsNaN(*f) || math.IsInf(*f, 0) {
			*f = math.MaxFloat64
		}
	}
	return j
}

// errNoRows is Check's complaint about an empty report.
var errNoRows = errors.New("the report has no rows")

package kernelbench

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// Variant is one of our kernels for a problem: the lesson's step it runs, the arithmetic of its
// products, and the float64 checks that judge it.
type Variant struct {
	Name  string `json:"name"`  // "9 fp16x3 split", "5 cp.async FP16"
	DType string `json:"dtype"` // "float32", "fp16x3", "fp16"
	// Tol is the float32 check: KernelBench's problems are float32 models, so every variant is
	// judged as a float32 kernel.
	Tol check.Tolerance `json:"tolerance"`
	// Own is the step's own tolerance where it is looser than Tol (a half-precision step), so its
	// error can be judged against what its format allows too; nil otherwise.
	Own  *check.Tolerance `json:"own_tolerance,omitempty"`
	Note string           `json:"note,omitempty"`
}

// Impl is our implementation of one problem on the device, set up for its full shape.
type Impl interface {
	// Variants are the kernels to judge, the float32-accurate one first (the one fast_p scores).
	Variants() []Variant
	// Load copies one trial's tensors, in the problem's order, to the device.
	Load(tensors [][]float32) error
	// Output runs variant v once on a NaN-poisoned output and returns the output's batch slices
	// idx, in order, and how many elements of the whole output are NaN or Inf.
	Output(v int, idx []int) (slices []float32, nonFinite int, err error)
	// Measure times variant v on the loaded tensors by the suite's method.
	Measure(v int) (record.Record, error)
	// Free releases the device memory.
	Free()
}

// Backend binds a run to our kernels and to the float64 references.
type Backend interface {
	// Memory is the device memory our kernels need for p (its tensors and their scratch) and the
	// memory free now, asked before anything is allocated.
	Memory(p Problem) (need, free int64, err error)
	// Open allocates p's tensors and sets up our kernels for them.
	Open(p Problem) (Impl, error)
	// Reference is the float64 output of n batch slices: tensors are SliceInputs, the first cut to
	// the slices, the others whole.
	Reference(p Problem, tensors [][]float32, n int) ([]float64, error)
}

// Config is how a run goes.
type Config struct {
	Trials int
	// Dir is the scratch folder of the files exchanged with PyTorch.
	Dir string
	// Torch runs the PyTorch script; nil when PyTorch is not available, TorchWhy saying why.
	Torch    TorchFunc
	TorchWhy string
	// Method is the warm-up and repetitions of the PyTorch timings (the lab's).
	Method bench.Method
	// Progress, when not nil, receives a line as each part of a problem finishes.
	Progress func(line string)
	// Finished, when not nil, receives the results so far after each problem, so that a run cut
	// short (a time limit) keeps the problems it finished.
	Finished func(done []Result)
}

func (c Config) progress(format string, args ...any) {
	if c.Progress != nil {
		c.Progress(fmt.Sprintf(format, args...))
	}
}

// F64Verdict is a variant under the suite's float64 check, over the trials.
type F64Verdict struct {
	Tol        string  `json:"tolerance"`
	Passed     int     `json:"passed"` // trials within Tol
	OwnTol     string  `json:"own_tolerance,omitempty"`
	OwnPassed  int     `json:"own_passed,omitempty"`
	Trials     int     `json:"trials"`
	WorstRelL2 float64 `json:"worst_rel_l2"` // -1: not finite
	MaxAbs     float64 `json:"max_abs"`
	NonFinite  int     `json:"non_finite"` // NaN or Inf anywhere in the outputs, all trials
	OK         bool    `json:"ok"`
	Why        string  `json:"why,omitempty"` // the first failure
}

// KBVerdict is a variant under KernelBench's rule: torch.allclose against the reference model's
// output on our inputs, in every trial.
type KBVerdict struct {
	Available bool   `json:"available"`
	Why       string `json:"why,omitempty"` // why not available
	Trials    int    `json:"trials"`
	Passed    int    `json:"passed"`     // trials within atol = rtol = Tol
	PassedNow int    `json:"passed_now"` // trials within TolFP32Now
	// MaxAbs is the largest |ours - PyTorch| over the trials.
	MaxAbs  float64 `json:"max_abs"`
	Correct bool    `json:"correct"` // every trial within Tol
}

// VariantResult is one variant's timing and verdicts.
type VariantResult struct {
	Variant Variant       `json:"variant"`
	Timing  record.Record `json:"timing"`
	Float64 F64Verdict    `json:"float64"`
	KB      KBVerdict     `json:"kernelbench"`
}

// Result is one problem's run: our variants, PyTorch's timings, what was compared.
type Result struct {
	Problem Problem `json:"problem"`
	ID      string  `json:"id"`
	Shape   string  `json:"shape"`
	Formula string  `json:"formula"`
	// SlicesPerTrial batch slices (SliceName each) were compared in each of Trials trials.
	SlicesPerTrial int             `json:"slices_per_trial"`
	SliceName      string          `json:"slice_name"`
	Trials         int             `json:"trials"`
	Variants       []VariantResult `json:"variants"`
	Eager          *bench.Timing   `json:"eager,omitempty"`
	Compile        *bench.Timing   `json:"compile,omitempty"`
	CompileNote    string          `json:"compile_note,omitempty"`
	// TorchNote says why PyTorch's columns are missing (not installed, the script failed).
	TorchNote string `json:"torch_note,omitempty"`
	// TorchRelL2 is PyTorch's own output against the float64 reference: the worst relative L2
	// error over the trials (-1: not measured).
	TorchRelL2 float64         `json:"torch_rel_l2"`
	TF32       map[string]bool `json:"torch_tf32,omitempty"`
	// Refused says why the problem did not run (not enough device memory); Error what failed.
	Refused string  `json:"refused,omitempty"`
	Error   string  `json:"error,omitempty"`
	Seconds float64 `json:"seconds"`
}

// Ran reports whether the problem ran to the end.
func (r Result) Ran() bool { return r.Refused == "" && r.Error == "" && len(r.Variants) > 0 }

// ErrRefused marks a problem refused before anything was allocated.
var ErrRefused = errors.New("refused")

// MemoryRefusal is nil when need fits in free, else an error naming both.
func MemoryRefusal(p Problem, need, free int64) error {
	if need <= free {
		return nil
	}
	return fmt.Errorf("%w: %s needs %s of device memory (%d bytes: its tensors %s and our kernels' scratch), and %s (%d bytes) are free",
		ErrRefused, p.ID(), gpu.FormatBytes(need), need, gpu.FormatBytes(p.TensorBytes()), gpu.FormatBytes(free), free)
}

// Run runs every problem in turn (RunProblem); a problem that fails or is refused is recorded and
// the next one runs.
func Run(problems []Problem, b Backend, cfg Config) []Result {
	out := make([]Result, 0, len(problems))
	for i, p := range problems {
		cfg.progress("[%d/%d] %s %s: %s, %s", i+1, len(problems), p.ID(), p.Title, p.ShapeString(), p.Formula())
		r := RunProblem(p, b, cfg)
		switch {
		case r.Refused != "":
			cfg.progress("%s refused: %s", p.ID(), r.Refused)
		case r.Error != "":
			cfg.progress("%s failed: %s", p.ID(), r.Error)
		default:
			cfg.progress("%s done in %.0f s", p.ID(), r.Seconds)
		}
		out = append(out, r)
		if cfg.Finished != nil {
			cfg.Finished(out)
		}
	}
	return out
}

// RunProblem runs one problem: for each trial, fresh inputs (the parameters drawn once), our
// variants on NaN-poisoned outputs, and the float64 reference on the sampled batch slices; then
// our variants timed, our device memory freed, and the PyTorch script run on the same slices (its
// outputs judged by allclose) and timed at the full shape, eager and compiled.
func RunProblem(p Problem, b Backend, cfg Config) (r Result) {
	start := time.Now()
	trials := cfg.Trials
	if trials < 1 {
		trials = Trials
	}
	r = Result{Problem: p, ID: p.ID(), Shape: p.ShapeString(), Formula: p.Formula(), SlicesPerTrial: p.SlicesOn(),
		SliceName: p.SliceName(), Trials: trials, TorchRelL2: -1}
	defer func() { r.Seconds = time.Since(start).Seconds() }()
	if err := p.Validate(); err != nil {
		r.Error = err.Error()
		return r
	}
	need, free, err := b.Memory(p)
	if err != nil {
		r.Error = fmt.Sprintf("asking for the device memory: %v", err)
		return r
	}
	if err := MemoryRefusal(p, need, free); err != nil {
		r.Refused = strings.TrimPrefix(err.Error(), ErrRefused.Error()+": "+p.ID()+" ") // "needs ..."
		return r
	}
	if cfg.Torch != nil { // the files exchanged with PyTorch, removed after the problem
		dir, err := os.MkdirTemp(cfg.Dir, p.ID()+"-")
		if err != nil {
			r.Error = fmt.Sprintf("a scratch folder for PyTorch's files: %v", err)
			return r
		}
		defer os.RemoveAll(dir)
		cfg.Dir = dir
	}
	run, err := ours(p, b, cfg, trials)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Variants = run.results
	if cfg.Torch == nil {
		r.TorchNote = "PyTorch unavailable: " + cfg.TorchWhy
		for i := range r.Variants {
			r.Variants[i].KB.Why = r.TorchNote
		}
		return r
	}
	if err := reference(p, cfg, trials, run, &r); err != nil {
		r.TorchNote = firstLine(err.Error())
		for i := range r.Variants {
			r.Variants[i].KB = KBVerdict{Why: r.TorchNote, Trials: trials}
		}
	}
	return r
}

// oursRun is what our side left for the PyTorch side: each variant's output slices per trial, the
// float64 references per trial, and the files written for the script.
type oursRun struct {
	results []VariantResult
	got     [][][]float32 // [variant][trial]
	want    [][]float64   // [trial]
	files   *torchFiles
}

// ours runs our variants over the trials and times them, then frees the device memory.
func ours(p Problem, b Backend, cfg Config, trials int) (*oursRun, error) {
	impl, err := b.Open(p)
	if err != nil {
		return nil, fmt.Errorf("setting up our kernels: %w", err)
	}
	defer impl.Free()
	variants := impl.Variants()
	if len(variants) == 0 {
		return nil, fmt.Errorf("%s: no kernel of ours takes this problem", p.ID())
	}
	run := &oursRun{results: make([]VariantResult, len(variants)), got: make([][][]float32, len(variants))}
	for i, v := range variants {
		f := F64Verdict{Tol: v.Tol.Name, Trials: trials, OK: true}
		if v.Own != nil {
			f.OwnTol = v.Own.Name
		}
		run.results[i] = VariantResult{Variant: v, Float64: f, KB: KBVerdict{Trials: trials}}
	}
	keep := cfg.Torch != nil
	if keep {
		run.files = newTorchFiles(cfg.Dir, p, cfg.Method)
	}
	params := DrawParams(p)
	if keep {
		if err := run.files.writeParams(p, params); err != nil {
			return nil, err
		}
	}
	n := p.SlicesOn()
	for t := 0; t < trials; t++ {
		tensors := DrawTrial(p, params, t)
		idx := SliceIndices(p.Batch(), n, t)
		sliced := SliceInputs(p, tensors, idx)
		if keep {
			if err := run.files.writeTrial(p, t, sliced, n); err != nil {
				return nil, err
			}
		}
		if err := impl.Load(tensors); err != nil {
			return nil, fmt.Errorf("%s trial %d: loading the inputs: %w", p.ID(), t, err)
		}
		want, err := b.Reference(p, sliced, n)
		if err != nil {
			return nil, fmt.Errorf("%s trial %d: float64 reference: %w", p.ID(), t, err)
		}
		for i, v := range variants {
			got, bad, err := impl.Output(i, idx)
			if err != nil {
				return nil, fmt.Errorf("%s trial %d, %s: %w", p.ID(), t, v.Name, err)
			}
			judge(&run.results[i].Float64, v, check.Float64s(got), want, bad)
			if keep {
				run.got[i] = append(run.got[i], got)
			}
		}
		if keep {
			run.want = append(run.want, want)
		}
		cfg.progress("%s trial %d/%d: %s compared, float64 check %s", p.ID(), t+1, trials, Counted(n, p.SliceName()), f64Line(run.results))
	}
	for i, v := range variants {
		rec, err := impl.Measure(i)
		if err != nil {
			return nil, fmt.Errorf("%s: timing %s: %w", p.ID(), v.Name, err)
		}
		run.results[i].Timing = rec.Finite()
		cfg.progress("%s %s: %s", p.ID(), v.Name, bench.Timing{Median: rec.MedianMS, Min: rec.MinMS, Max: rec.MaxMS})
	}
	return run, nil
}

// judge adds one trial's float64 comparison of a variant to its verdict.
func judge(f *F64Verdict, v Variant, got, want []float64, nonFinite int) {
	c := check.Compare(got, want, v.Tol)
	f.NonFinite += nonFinite
	ok := c.OK && nonFinite == 0
	if ok {
		f.Passed++
	} else {
		f.OK = false
		if f.Why == "" {
			if err := c.Err(); err != nil {
				f.Why = err.Error()
			} else {
				f.Why = fmt.Sprintf("%d NaN or Inf outside the compared slices (an unwritten output stays NaN)", nonFinite)
			}
		}
	}
	if v.Own != nil && nonFinite == 0 && check.Compare(got, want, *v.Own).OK {
		f.OwnPassed++
	}
	if math.IsNaN(c.RelL2) || math.IsInf(c.RelL2, 0) || f.WorstRelL2 < 0 {
		f.WorstRelL2 = -1
	} else {
		f.WorstRelL2 = math.Max(f.WorstRelL2, c.RelL2)
	}
	f.MaxAbs = math.Max(f.MaxAbs, c.MaxAbs)
}

func f64Line(rs []VariantResult) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%s %d/%d", r.Variant.Name, r.Float64.Passed, r.Float64.Trials))
	}
	return strings.Join(parts, ", ")
}

// reference runs the PyTorch script on the trials' slices and times the model, then judges our
// outputs by KernelBench's rule.
func reference(p Problem, cfg Config, trials int, run *oursRun, r *Result) error {
	cfg.progress("%s: PyTorch's reference model on the %d trials' slices, then eager and torch.compile at the full shape", p.ID(), trials)
	var tr torchResult
	if err := cfg.Torch(script, run.files.args, &tr); err != nil {
		return err
	}
	if tr.Trials != trials {
		return fmt.Errorf("the PyTorch script ran %d of %d trials", tr.Trials, trials)
	}
	r.TF32 = tr.TF32
	if tr.Eager != nil {
		t := tr.Eager.Bench()
		r.Eager = &t
	}
	if tr.Compile != nil {
		t := tr.Compile.Bench()
		r.Compile = &t
	} else {
		r.CompileNote = tr.CompileError
	}
	n := p.SlicesOn()
	worst := 0.0
	for t := 0; t < trials; t++ {
		ref, err := run.files.output(p, t, n)
		if err != nil {
			return err
		}
		c := check.Compare(check.Float64s(ref), run.want[t], check.FP32)
		if math.IsNaN(c.RelL2) || math.IsInf(c.RelL2, 0) || worst < 0 {
			worst = -1
		} else {
			worst = math.Max(worst, c.RelL2)
		}
		for i := range r.Variants {
			kb := &r.Variants[i].KB
			got := run.got[i][t]
			if AllClose(ref, got, Tol, Tol) {
				kb.Passed++
			}
			if AllClose(ref, got, TolFP32Now, TolFP32Now) {
				kb.PassedNow++
			}
			if d := MaxAbsDiff(ref, got); math.IsNaN(d) || kb.MaxAbs < 0 {
				kb.MaxAbs = -1
			} else {
				kb.MaxAbs = math.Max(kb.MaxAbs, d)
			}
		}
		cfg.progress("%s trial %d/%d: PyTorch's output compared", p.ID(), t+1, trials)
	}
	r.TorchRelL2 = worst
	for i := range r.Variants {
		kb := &r.Variants[i].KB
		kb.Available, kb.Trials, kb.Correct = true, trials, kb.Passed == trials
	}
	return nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

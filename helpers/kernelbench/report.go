package kernelbench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// Source is where the problems were read, for the receipt.
type Source struct {
	Repo           string `json:"repo"`
	Commit         string `json:"commit"`
	ProblemsCommit string `json:"problems_commit"`
}

// Report is a run's JSON receipt: where and how it ran, every problem's result, and fast_p.
type Report struct {
	Receipt     record.Receipt `json:"receipt"`
	Commit      string         `json:"commit"` // this project's commit
	KernelBench Source         `json:"kernelbench"`
	Trials      int            `json:"trials"`
	Rules       []string       `json:"rules"`
	Results     []Result       `json:"results"`
	FastP       []FastPRow     `json:"fast_p"`
}

// NewReport assembles the receipt of a run.
func NewReport(rec record.Receipt, commit string, trials int, results []Result) Report {
	return Report{Receipt: rec, Commit: commit, KernelBench: Source{Repo: SourceRepo, Commit: SourceCommit, ProblemsCommit: ProblemsCommit},
		Trials: trials, Rules: Rules(trials), Results: results, FastP: FastPTable(results, FastPs())}
}

// Rules say in words how the run judged and timed, for the receipt and the tables' caption.
func Rules(trials int) []string {
	return []string{
		fmt.Sprintf("KernelBench's verdict: in each of %d trials, fresh inputs from the problem's distribution (the model's parameters drawn once), the reference PyTorch model run on the sampled batch slices of OUR inputs, and torch.allclose(reference, ours, atol=rtol=%s) on those slices; correct when every trial passes. Beside it, the trials within %s, the float32 tolerance of eval.py at %s.", trials, sci(Tol), sci(TolFP32Now), SourceCommit[:7]),
		"The suite's verdict: the same slices against a float64 CPU reference (the lessons' references) at the float32 tolerance of helpers/check, every output NaN-poisoned before the run and the whole output scanned for NaN and Inf.",
		"Times: CUDA events around the work alone, warm-up runs, the L2 flushed before every run, the median (KernelBench reports the mean); PyTorch runs under torch.no_grad with its default TF32 settings (matmul off, cuDNN convolutions on), as KernelBench leaves them.",
		"fast_p: the problems that are correct and more than p times faster than the baseline, over all problems run or not (KernelBench's score.py), scored on each problem's float32-accurate kernel, and on the fastest of our kernels that KernelBench's check accepts.",
	}
}

// sci writes a power of ten as "1e-2".
func sci(v float64) string {
	e := math.Round(math.Log10(v))
	if math.Pow(10, e) == v {
		return fmt.Sprintf("1e%d", int(e))
	}
	return fmt.Sprintf("%g", v)
}

// Save writes the report as indented JSON, creating its folder.
func (r Report) Save(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the kernelbench report: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing the kernelbench report: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the kernelbench report: %w", err)
	}
	return nil
}

// LoadReport reads a report written by Save.
func LoadReport(path string) (Report, error) {
	var r Report
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("reading %s: %w", path, err)
	}
	return r, nil
}

// FastPRow is fast_p at one p against eager PyTorch and against torch.compile, by three rules:
// the float32-accurate kernel under KernelBench's check (KB), the same kernel under the float64
// check (F64), and the fastest kernel KernelBench's check accepts (Any). nil: no baseline measured.
type FastPRow struct {
	P          float64  `json:"p"`
	KBEager    *float64 `json:"kernelbench_vs_eager"`
	KBCompile  *float64 `json:"kernelbench_vs_compile"`
	F64Eager   *float64 `json:"float64_vs_eager"`
	F64Compile *float64 `json:"float64_vs_compile"`
	AnyEager   *float64 `json:"fastest_accepted_vs_eager"`
	AnyCompile *float64 `json:"fastest_accepted_vs_compile"`
}

// rule picks, for a problem that ran, the variant fast_p scores and whether it is correct.
type rule func(r Result) (v VariantResult, correct, ok bool)

func primaryKB(r Result) (VariantResult, bool, bool) {
	v := r.Variants[0]
	return v, v.KB.Correct, true
}

func primaryF64(r Result) (VariantResult, bool, bool) {
	v := r.Variants[0]
	return v, v.Float64.OK, true
}

// fastestAccepted is the fastest variant KernelBench's check accepts, if any.
func fastestAccepted(r Result) (VariantResult, bool, bool) {
	best, found := VariantResult{}, false
	for _, v := range r.Variants {
		if v.KB.Correct && v.Timing.MedianMS > 0 && (!found || v.Timing.MedianMS < best.Timing.MedianMS) {
			best, found = v, true
		}
	}
	if !found {
		return r.Variants[0], false, true
	}
	return best, true, true
}

// Outcomes are the problems as fast_p sees them under a rule, against eager PyTorch (compile
// false) or torch.compile: a problem that did not run is incorrect, with no speedup.
func outcomes(results []Result, pick rule, compile bool) []Outcome {
	out := make([]Outcome, len(results))
	for i, r := range results {
		if !r.Ran() {
			continue
		}
		v, correct, ok := pick(r)
		if !ok {
			continue
		}
		base := r.Eager
		if compile {
			base = r.Compile
		}
		if base != nil && v.Timing.MedianMS > 0 {
			out[i] = Outcome{Correct: correct, Speedup: base.Median / v.Timing.MedianMS}
		} else {
			out[i] = Outcome{Correct: correct}
		}
	}
	return out
}

// FastPTable is fast_p at every p by the three rules, against eager and torch.compile.
func FastPTable(results []Result, ps []float64) []FastPRow {
	at := func(pick rule, compile bool, p float64) *float64 {
		v := FastP(outcomes(results, pick, compile), p)
		if math.IsNaN(v) {
			return nil
		}
		return &v
	}
	out := make([]FastPRow, len(ps))
	for i, p := range ps {
		out[i] = FastPRow{P: p,
			KBEager: at(primaryKB, false, p), KBCompile: at(primaryKB, true, p),
			F64Eager: at(primaryF64, false, p), F64Compile: at(primaryF64, true, p),
			AnyEager: at(fastestAccepted, false, p), AnyCompile: at(fastestAccepted, true, p)}
	}
	return out
}

// Tables are the run's tables: one row per kernel of ours per problem, then fast_p.
func Tables(rep Report) []show.Table {
	return []show.Table{ResultsTable(rep), FastPShow(rep)}
}

// ResultsTable has a row per variant of each problem: shape, dtype, times, speedups, both
// verdicts, and what was compared.
func ResultsTable(rep Report) show.Table {
	t := show.Table{Title: "KernelBench problems as KernelBench runs them, on " + rep.Receipt.Device.Name,
		Header: []string{"problem", "shape", "dtype", "our kernel", "eager", "torch.compile", "ours", "vs eager", "vs compile",
			"KernelBench (allclose 1e-2; 1e-4)", "float64 check (rel L2)", "compared"}}
	for _, r := range rep.Results {
		name := r.ID + " " + r.Problem.Title
		if !r.Ran() {
			why := "failed (see below)"
			if r.Refused != "" {
				why = "refused (see below)"
			}
			t.Rows = append(t.Rows, []string{name, r.Shape, "float32", why, "—", "—", "—", "—", "—", "—", "—", "—"})
			continue
		}
		eager, compiled := msOf(r.Eager), msOf(r.Compile)
		for _, v := range r.Variants {
			ours := v.Timing.MedianMS
			t.Rows = append(t.Rows, []string{name, r.Shape, v.Variant.DType, v.Variant.Name, show.MS(eager), show.MS(compiled), show.MS(ours),
				show.Ratio(eager, ours), show.Ratio(compiled, ours), kbCell(v.KB), f64Cell(v.Float64),
				fmt.Sprintf("%s x %d trials", Counted(r.SlicesPerTrial, r.SliceName), r.Trials)})
		}
	}
	lines := append(append([]string{}, rep.Rules...), Notes(rep.Results)...)
	t.Caption = strings.Join(append(lines, "Measured: "+rep.Receipt.String()+"; commit "+rep.Commit+"."), "\n")
	return t
}

// msOf is a timing's median, 0 when it was not measured.
func msOf(t *bench.Timing) float64 {
	if t == nil {
		return 0
	}
	return t.Median
}

func kbCell(k KBVerdict) string {
	if !k.Available {
		return "n/a"
	}
	verdict := "correct"
	if !k.Correct {
		verdict = "INCORRECT"
	}
	return fmt.Sprintf("%s %d/%d; %d/%d", verdict, k.Passed, k.Trials, k.PassedNow, k.Trials)
}

func f64Cell(f F64Verdict) string {
	verdict := "pass"
	if !f.OK {
		verdict = "FAIL"
	}
	return verdict + " " + f.Counts()
}

// Counts is the float64 check's tally: the trials within float32's tolerance and the worst error,
// the trials within the step's own tolerance when it has one, and the NaN and Inf outputs if any.
func (f F64Verdict) Counts() string {
	s := fmt.Sprintf("%d/%d (%s)", f.Passed, f.Trials, relL2(f.WorstRelL2))
	if f.OwnTol != "" {
		s += fmt.Sprintf("; %s bound %d/%d", f.OwnTol, f.OwnPassed, f.Trials)
	}
	if f.NonFinite > 0 {
		s += fmt.Sprintf("; %d NaN/Inf", f.NonFinite)
	}
	return s
}

func relL2(v float64) string {
	if v < 0 {
		return "not finite"
	}
	return fmt.Sprintf("%.1e", v)
}

// Notes are the sentences a reader needs beside the table: why a problem was refused or failed,
// PyTorch's missing columns and why, torch.compile failures, PyTorch's own error against float64,
// and each failed check's reason.
func Notes(results []Result) []string {
	var out []string
	for _, r := range results {
		switch {
		case r.Refused != "":
			out = append(out, fmt.Sprintf("%s refused: %s.", r.ID, strings.TrimSuffix(r.Refused, ".")))
			continue
		case !r.Ran():
			out = append(out, fmt.Sprintf("%s failed: %s.", r.ID, strings.TrimSuffix(firstLine(r.Error), ".")))
			continue
		}
		if r.TorchNote != "" {
			out = append(out, fmt.Sprintf("%s: %s.", r.ID, strings.TrimSuffix(r.TorchNote, ".")))
		}
		if r.Eager != nil && r.Compile == nil && r.CompileNote != "" {
			out = append(out, fmt.Sprintf("%s: torch.compile unavailable (%s).", r.ID, strings.TrimSuffix(r.CompileNote, ".")))
		}
		if r.TorchRelL2 >= 0 && r.Eager != nil {
			out = append(out, fmt.Sprintf("%s: PyTorch's own output is %.1e from float64 (rel L2).", r.ID, r.TorchRelL2))
		}
		for _, v := range r.Variants {
			if v.Variant.Note != "" {
				out = append(out, fmt.Sprintf("%s %s: %s.", r.ID, v.Variant.Name, strings.TrimSuffix(v.Variant.Note, ".")))
			}
			if !v.Float64.OK && v.Float64.Why != "" {
				out = append(out, fmt.Sprintf("%s %s, float64 check: %s.", r.ID, v.Variant.Name, strings.TrimSuffix(v.Float64.Why, ".")))
			}
		}
	}
	return out
}

// FastPShow is the fast_p table: rows p, columns the three rules against eager and torch.compile.
func FastPShow(rep Report) show.Table {
	t := show.Table{Title: fmt.Sprintf("fast_p over %d problems: correct and more than p times faster than the baseline", len(rep.Results)),
		Header: []string{"p", "float32 kernel, KernelBench's check: vs eager", "vs compile",
			"float32 kernel, float64 check: vs eager", "vs compile", "fastest kernel KernelBench accepts: vs eager", "vs compile"}}
	n := len(rep.Results)
	cell := func(v *float64) string {
		if v == nil {
			return "n/a"
		}
		return fmt.Sprintf("%.2f (%d/%d)", *v, int(math.Round(*v*float64(n))), n)
	}
	for _, r := range rep.FastP {
		t.Rows = append(t.Rows, []string{fmt.Sprintf("%g", r.P), cell(r.KBEager), cell(r.KBCompile), cell(r.F64Eager), cell(r.F64Compile),
			cell(r.AnyEager), cell(r.AnyCompile)})
	}
	t.Caption = "n/a: PyTorch's timings are missing (not installed, or its script failed). The float32 kernel is the first of each problem's rows; the fastest accepted may be a half-precision one, which KernelBench's 1e-2 admits."
	return t
}

// MergeReports joins reports of one GPU, one commit and one trial count that ran different
// problems (a run split over several calls, each under a time limit) into one, its results in the
// catalog's order and fast_p taken over all of them. The receipt is the first report's, dated by
// the last. Reports of different GPUs, commits or trial counts, or that ran the same problem twice,
// are an error naming the difference.
func MergeReports(reps ...Report) (Report, error) {
	if len(reps) == 0 {
		return Report{}, fmt.Errorf("kernelbench: no report to merge")
	}
	first := reps[0]
	seen := map[string]bool{}
	var results []Result
	last := first.Receipt.Date
	for i, r := range reps {
		switch {
		case r.Receipt.Device.Name != first.Receipt.Device.Name:
			return Report{}, fmt.Errorf("kernelbench: report %d ran on %s, report 1 on %s: one GPU per record", i+1, r.Receipt.Device.Name, first.Receipt.Device.Name)
		case r.Commit != first.Commit:
			return Report{}, fmt.Errorf("kernelbench: report %d is of commit %q, report 1 of %q: one commit per record", i+1, r.Commit, first.Commit)
		case r.Trials != first.Trials:
			return Report{}, fmt.Errorf("kernelbench: report %d ran %d trials, report 1 %d", i+1, r.Trials, first.Trials)
		}
		for _, res := range r.Results {
			if seen[res.ID] {
				return Report{}, fmt.Errorf("kernelbench: %s is in two of the reports", res.ID)
			}
			seen[res.ID] = true
			results = append(results, res)
		}
		if r.Receipt.Date > last {
			last = r.Receipt.Date
		}
	}
	order := map[string]int{}
	for i, p := range Problems() {
		order[p.ID()] = i
	}
	slices.SortStableFunc(results, func(a, b Result) int {
		ia, oka := order[a.ID]
		ib, okb := order[b.ID]
		switch {
		case oka && okb:
			return ia - ib
		case oka:
			return -1
		case okb:
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	rec := first.Receipt
	rec.Date = last
	return NewReport(rec, first.Commit, first.Trials, results), nil
}

// Counted is n of a thing named name, in English: "1 image", "4 rows", "2 batches".
func Counted(n int, name string) string {
	switch {
	case n == 1:
		return "1 " + name
	case strings.HasSuffix(name, "ch"), strings.HasSuffix(name, "s"):
		return fmt.Sprintf("%d %ses", n, name)
	}
	return fmt.Sprintf("%d %ss", n, name)
}

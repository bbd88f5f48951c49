package hostile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/record"
)

// Report is a run of the catalogue: where and when, the seed, PyTorch's version, and one row per
// case.
type Report struct {
	Receipt record.Receipt `json:"receipt"`
	Commit  string         `json:"commit"`
	Go      string         `json:"go"`
	Seed    uint64         `json:"seed"`
	Short   bool           `json:"short"`
	// Torch is PyTorch's version, or "unavailable: " and why.
	Torch   string  `json:"torch"`
	Seconds float64 `json:"seconds"`
	Ops     []Op    `json:"ops"`
	Dists   []Dist  `json:"dists"`
	Rows    []Row   `json:"rows"`
}

// Row is one case: the op, the distribution and the shape, the step that ran (and the one the
// dispatch predicts), the verdict and why, and each output's judgement.
type Row struct {
	ID        string `json:"id"`
	Op        string `json:"op"`
	Lesson    string `json:"lesson"`
	Dist      string `json:"dist"`
	Shape     string `json:"shape"`
	Dims      []int  `json:"dims"`
	Offset    int    `json:"offset,omitempty"`
	Note      string `json:"note"`
	Seed      uint64 `json:"seed"`
	Step      string `json:"step"`
	Predicted string `json:"predicted"`
	Verdict   string `json:"verdict"`
	Why       string `json:"why,omitempty"`
	// Torch is PyTorch's own output judged by the same rules, never failing the op: "pass",
	// "differs: " and what, per output, or why PyTorch has no output ("unavailable").
	Torch   string   `json:"torch,omitempty"`
	Outputs []Judged `json:"outputs,omitempty"`
}

// Line is the row in one line.
func (r Row) Line() string {
	s := fmt.Sprintf("%-7s %s (%s) %s, %s: %s", strings.ToUpper(r.Verdict), r.Op, r.Lesson, r.Shape, r.Dist, r.Step)
	if r.Why != "" {
		s += " — " + r.Why
	}
	if r.Verdict != Refused && r.Torch != "" {
		s += " [PyTorch: " + r.Torch + "]"
	}
	return s
}

// Count is the number of rows of each verdict.
func (rep *Report) Count() (pass, refused, fail int) {
	for _, r := range rep.Rows {
		switch r.Verdict {
		case Pass:
			pass++
		case Refused:
			refused++
		default:
			fail++
		}
	}
	return pass, refused, fail
}

// Failures are the rows that failed.
func (rep *Report) Failures() []Row {
	var out []Row
	for _, r := range rep.Rows {
		if r.Verdict != Pass && r.Verdict != Refused {
			out = append(out, r)
		}
	}
	return out
}

// Summary is the run in a few lines: the receipt, the counts, each op's paths (and how many cases
// PyTorch's own output breaks the rules in), and every failure.
func (rep *Report) Summary() []string {
	p, r, f := rep.Count()
	kind := "full run"
	if rep.Short {
		kind = "short run"
	}
	out := []string{
		fmt.Sprintf("Hostile inputs (%s) on %s, driver %s (CUDA %s), NVRTC %s, %s, commit %s, seed %d, PyTorch %s",
			kind, rep.Receipt.Device.Name, rep.Receipt.DriverRelease, rep.Receipt.CUDADriver, rep.Receipt.NVRTC, rep.Receipt.Date, rep.Commit, rep.Seed, rep.Torch),
		fmt.Sprintf("%d cases in %.0f s: %d pass, %d refused, %d fail", len(rep.Rows), rep.Seconds, p, r, f),
	}
	for _, op := range rep.Ops {
		var n, np, nr, nf, other, differs int
		var steps []string
		for _, row := range rep.Rows {
			if row.Op != op.Name {
				continue
			}
			n++
			switch row.Verdict {
			case Pass:
				np++
			case Refused:
				nr++
			default:
				nf++
			}
			if row.Step != "" && !slices.Contains(steps, row.Step) {
				steps = append(steps, row.Step)
			}
			if row.Verdict != Refused && row.Step != row.Predicted {
				other++
			}
			if strings.HasPrefix(row.Torch, "differs: ") {
				differs++
			}
		}
		line := fmt.Sprintf("  %s (lesson %s): %d cases, %d pass, %d refused, %d fail; steps: %s", op.Name, op.Lesson, n, np, nr, nf, strings.Join(steps, " | "))
		if other > 0 {
			line += fmt.Sprintf("; %d cases ran another step than the dispatch's rule predicts", other)
		}
		if differs > 0 {
			line += fmt.Sprintf("; PyTorch differs from the rules in %d cases (recorded, not failures)", differs)
		}
		out = append(out, line)
	}
	for _, row := range rep.Failures() {
		out = append(out, "  "+row.Line())
	}
	return out
}

// Check is what the suite requires of a recorded run of the catalogue cat: a complete receipt,
// every op of the catalogue with every path exercised and every distribution it takes, a full run
// (not short), and no failure.
func (rep *Report) Check(cat []*Op) []error {
	var errs []error
	rc := rep.Receipt
	for _, f := range []struct{ name, v string }{{"GPU", rc.Device.Name}, {"driver", rc.DriverRelease}, {"CUDA", rc.CUDADriver},
		{"NVRTC", rc.NVRTC}, {"date", rc.Date}, {"Go", rc.GoVersion}, {"commit", rep.Commit}, {"PyTorch", rep.Torch}} {
		if strings.TrimSpace(f.v) == "" {
			errs = append(errs, fmt.Errorf("the receipt has no %s", f.name))
		}
	}
	if len(rep.Rows) == 0 {
		return append(errs, errNoRows)
	}
	if rep.Short {
		errs = append(errs, fmt.Errorf("a short run: the record must be the full catalogue (cmd/hostile without -short)"))
	}
	for _, op := range cat {
		var rows []Row
		for _, r := range rep.Rows {
			if r.Op == op.Name {
				rows = append(rows, r)
			}
		}
		if len(rows) == 0 {
			errs = append(errs, fmt.Errorf("op %s (lesson %s) is not in the report", op.Name, op.Lesson))
			continue
		}
		for _, p := range op.Paths {
			if !slices.ContainsFunc(rows, func(r Row) bool { return Exercises(r.Step, p) }) {
				errs = append(errs, fmt.Errorf("%s: no case took path %q", op.Name, p))
			}
		}
		for _, d := range op.DistsFor() {
			if !slices.ContainsFunc(rows, func(r Row) bool { return r.Dist == d.Name }) {
				errs = append(errs, fmt.Errorf("%s: no case of distribution %q", op.Name, d.Name))
			}
		}
		for _, s := range op.Shapes {
			if !rep.Short && !slices.ContainsFunc(rows, func(r Row) bool { return r.Shape == s.String() }) {
				errs = append(errs, fmt.Errorf("%s: no case of shape %s (%s)", op.Name, s, s.Note))
			}
		}
	}
	for _, r := range rep.Failures() {
		errs = append(errs, fmt.Errorf("%s", r.Line()))
	}
	return errs
}

// Save writes the report as indented JSON.
func (rep *Report) Save(path string) error {
	data, err := json.MarshalIndent(rep, "", " ")
	if err != nil {
		return fmt.Errorf("encoding the report: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// Load reads a report Save wrote.
func Load(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("no hostile-inputs record: %w (record one on a GPU: go run ./cmd/hostile -out results)", err)
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return &rep, nil
}

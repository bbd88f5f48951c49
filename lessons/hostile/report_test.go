package hostile

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// recordPath is the recorded run of the full catalogue on the GPU (cmd/hostile -out results).
const recordPath = "../../results/hostile.json"

// The recorded run has a complete receipt, every op of the catalogue with every path taken and
// every distribution and shape it takes, and no failure but those of judgedSince.
func TestRecordedRun(t *testing.T) {
	rep, err := Load(recordPath)
	if err != nil {
		t.Fatal(err)
	}
	known, pending := map[string]bool{}, maps.Clone(judgedSince)
	for _, r := range rep.Failures() {
		key := fmt.Sprintf("%s %s, %s", r.Op, r.Shape, r.Dist)
		if why, ok := judgedSince[key]; ok {
			known[r.Line()] = true
			t.Logf("recorded failure judged by another rule since the run (%s): %s", why, r.Line())
			delete(pending, key)
		}
	}
	for _, err := range rep.Check(Catalogue()) {
		if !known[err.Error()] {
			t.Error(err)
		}
	}
	for key := range pending {
		t.Errorf("judgedSince lists %q, which the recorded run does not have as a failure: remove it", key)
	}
	for _, l := range rep.Summary() {
		t.Log(l)
	}
}

// judgedSince lists the recorded run's failures whose judging rule changed after the run, each
// with the change. The run was made at its receipt's commit; the next recorded run must show
// them passing, and a listed case that the record no longer has as a failure fails
// TestRecordedRun, so the list empties when the run is recorded again.
var judgedSince = map[string]string{}

// complete is a report that passes Check: one row per path of each op, each distribution and
// each shape.
func complete() *Report {
	rep := &Report{Receipt: record.Receipt{DriverRelease: "580", CUDADriver: "13.0", NVRTC: "13.0", Date: "2026-11-27T12:00:00Z", GoVersion: "go1.26"},
		Commit: "abc123", Torch: "2.11"}
	rep.Receipt.Device.Name = "NVIDIA H200"
	for _, op := range Catalogue() {
		for i, d := range op.DistsFor() {
			s := op.Shapes[i%len(op.Shapes)]
			rep.Rows = append(rep.Rows, Row{Op: op.Name, Dist: d.Name, Shape: s.String(), Step: op.Paths[i%len(op.Paths)], Verdict: Pass})
		}
		for i, s := range op.Shapes {
			rep.Rows = append(rep.Rows, Row{Op: op.Name, Dist: Dists[0].Name, Shape: s.String(), Step: op.Paths[i%len(op.Paths)], Verdict: Refused, Why: "too big"})
		}
		for _, p := range op.Paths {
			rep.Rows = append(rep.Rows, Row{Op: op.Name, Dist: Dists[0].Name, Shape: op.Shapes[0].String(), Step: p + "; after", Verdict: Pass})
		}
	}
	for i := range rep.Rows {
		rep.Rows[i].Predicted = rep.Rows[i].Step
	}
	return rep
}

// Check finds each thing a record can lack.
func TestCheck(t *testing.T) {
	if errs := complete().Check(Catalogue()); len(errs) != 0 {
		t.Fatalf("a complete report: %v", errs)
	}
	soft, _ := OpByName("softmax")
	for _, c := range []struct {
		name  string
		spoil func(*Report)
		want  string
	}{
		{"no GPU in the receipt", func(r *Report) { r.Receipt.Device.Name = "" }, "no GPU"},
		{"no commit", func(r *Report) { r.Commit = "" }, "no commit"},
		{"a failure", func(r *Report) { r.Rows[3].Verdict, r.Rows[3].Why = Fail, "y differs" }, "y differs"},
		{"a short run", func(r *Report) { r.Short = true }, "short run"},
		{"an op missing", func(r *Report) {
			var keep []Row
			for _, row := range r.Rows {
				if row.Op != "layer norm" {
					keep = append(keep, row)
				}
			}
			r.Rows = keep
		}, "layer norm (lesson 04) is not in the report"},
		{"a path missing", func(r *Report) {
			for i := range r.Rows {
				if r.Rows[i].Op == soft.Name && Exercises(r.Rows[i].Step, soft.Paths[2]) {
					r.Rows[i].Step = soft.Paths[0]
				}
			}
		}, fmt.Sprintf("no case took path %q", soft.Paths[2])},
		{"a distribution missing", func(r *Report) {
			for i := range r.Rows {
				if r.Rows[i].Dist == "masked -inf" {
					r.Rows[i].Dist = "normal 1"
				}
			}
		}, `no case of distribution "masked -inf"`},
	} {
		rep := complete()
		c.spoil(rep)
		errs := rep.Check(Catalogue())
		found := false
		for _, err := range errs {
			found = found || strings.Contains(err.Error(), c.want)
		}
		if !found {
			t.Errorf("%s: Check says %v, want an error containing %q", c.name, errs, c.want)
		}
	}
	if errs := (&Report{}).Check(Catalogue()); len(errs) == 0 {
		t.Errorf("an empty report passed")
	}
}

// A report survives Save and Load, and Load names what to run when there is no record.
func TestSaveLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hostile.json")
	rep := complete()
	for _, op := range Catalogue() {
		rep.Ops = append(rep.Ops, *op)
	}
	rep.Dists = Dists
	rep.Rows[0].Outputs = []Judged{Judge("y", []float32{1, float32(nan)}, []float64{1, 2}, nil, check.FP32, 2).finite()}
	if err := rep.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Rows) != len(rep.Rows) || back.Rows[0].Outputs[0].OK || len(back.Ops) != len(rep.Ops) || back.Ops[0].Paths[0] != rep.Ops[0].Paths[0] || len(back.Dists) != len(Dists) {
		t.Errorf("the report came back as %d rows (want %d), first output ok %v", len(back.Rows), len(rep.Rows), back.Rows[0].Outputs[0].OK)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none.json")); err == nil || !strings.Contains(err.Error(), "cmd/hostile") {
		t.Errorf("a missing record: %v", err)
	}
}

// The PyTorch script the run sends python3 compiles, with every op's function.
func TestTorchScriptCompiles(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 here")
	}
	f := filepath.Join(t.TempDir(), "script.py")
	script := torchScript(Catalogue())
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(py, "-m", "py_compile", f).CombinedOutput(); err != nil {
		t.Fatalf("the PyTorch script does not compile: %v\n%s", err, out)
	}
	for _, op := range Catalogue() {
		if !strings.Contains(script, fmt.Sprintf("FNS[%q]", op.Name)) {
			t.Errorf("the script has no function for %s", op.Name)
		}
	}
}

// The summary counts each verdict, names each op's steps, says where a case ran another step than
// the dispatch predicts, and lists every failure.
func TestSummary(t *testing.T) {
	rep := complete()
	for _, op := range Catalogue() {
		rep.Ops = append(rep.Ops, *op)
	}
	rep.Rows[0].Verdict, rep.Rows[0].Why = Fail, "y: 3 elements not NaN where the reference is NaN"
	rep.Rows[1].Predicted = "something else"
	rep.Rows[2].Torch = "differs: y: 1 of 4 elements not NaN where the reference is NaN"
	lines := strings.Join(rep.Summary(), "\n")
	p, r, f := rep.Count()
	for _, want := range []string{fmt.Sprintf("%d pass, %d refused, %d fail", p, r, f), "FAIL", "3 elements not NaN",
		"1 cases ran another step", "PyTorch differs from the rules in 1 cases", rep.Ops[0].Paths[0]} {
		if !strings.Contains(lines, want) {
			t.Errorf("the summary has no %q:\n%s", want, lines)
		}
	}
	if f != 1 || r == 0 {
		t.Errorf("counts %d pass, %d refused, %d fail", p, r, f)
	}
}

// Every case of a run has its own seed, drawn from the run's: another run seed draws other inputs.
func TestCasesSeeded(t *testing.T) {
	a, b := Cases(Catalogue(), nil, false, 1), Cases(Catalogue(), nil, false, 2)
	seen := map[uint64]bool{}
	for i, c := range a {
		if seen[c.Seed] {
			t.Fatalf("case %d (%s %s %s) repeats a seed", i, c.Op.Name, c.Shape, c.Dist.Name)
		}
		seen[c.Seed] = true
		if b[i].Seed == c.Seed {
			t.Fatalf("case %d has the same seed under run seeds 1 and 2", i)
		}
	}
	short := Cases(Catalogue(), []string{"softmax"}, true, 1)
	for _, c := range short {
		if c.Op.Name != "softmax" || !c.Shape.Short {
			t.Fatalf("a short softmax run has %s %s", c.Op.Name, c.Shape)
		}
	}
	if len(short) == 0 || len(short) >= len(Cases(Catalogue(), []string{"softmax"}, false, 1)) {
		t.Errorf("the short softmax run has %d cases", len(short))
	}
}

package labtest

import (
	"bytes"

	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"

	"github.com/cudalessons/cudalessons/helpers/lab"
)

// ReadingsFound checks a lesson's readings cells (each cell's readings by the name of the function
// that gives them) against the recorded figures of lesson id (results/: its run and its profiles):
// every cell has readings, every reading finds its figure there, a claim always comes with its
// test, and the cell the no-GPU mode shows states every reading (none says "not in this run"). So
// a renamed variant, case, profiled step or metric fails here rather than in a reader's notebook.
// The claims' verdicts are logged, not judged: a claim may fail on a GPU.
func ReadingsFound(t *testing.T, id string, cells map[string][]lab.Reading) {
	t.Helper()
	f := lab.RecordedFigures(id)
	if f.Run == nil || f.Profiles == nil {
		t.Fatalf("%s: recorded run %v, recorded profiles %v: both are needed", id, f.Run != nil, f.Profiles != nil)
	}
	for cell, rs := range cells {
		if len(rs) == 0 {
			t.Errorf("%s: no readings", cell)
		}
		for _, r := range rs {
			v, ok := r.Value(f)
			if !ok {
				t.Errorf("%s: %q finds no figure in the recorded run or profiles", cell, r.What)
				continue
			}
			if (r.Claim == "") != (r.Holds == nil) {
				t.Errorf("%s: %q has a claim without its test, or a test without its claim", cell, r.What)
			}
			if r.Holds != nil {
				t.Logf("%s: %s = %s; the claim held: %v", cell, r.What, r.Format(v), r.Holds(v))
			}
			if _, ok := r.Value(lab.Figures{}); ok {
				t.Errorf("%s: %q found a figure in no run: readings must read the figures given", cell, r.What)
			}
		}
		md := lab.Readings(f, f, false, rs...)
		if !strings.Contains(md, "recorded run") || strings.Count(md, "\n* ") != len(rs) || strings.Contains(md, "not in this run") {
			t.Errorf("%s: the cell says:\n%s", cell, md)
		}
	}
}

// CaptureShow sends what the cells show (show.Out) to a buffer until the test ends, and returns it.
func CaptureShow(t testing.TB) *bytes.Buffer {
	var out bytes.Buffer
	old := show.Out
	show.Out = &out
	t.Cleanup(func() { show.Out = old })
	return &out
}

// ClaimFailsWhen checks that readings judge the figures rather than assume them: in a copy of lesson
// id's recorded run whose record of variant in case c takes the median time median(run) (the
// recorded run), the readings rs say that a claim did not hold. what says what the change makes of
// the step, for the failure's message.
func ClaimFailsWhen(t *testing.T, id, c, variant string, median func(run *record.Run) float64, what string, rs ...lab.Reading) {
	t.Helper()
	f := lab.RecordedFigures(id)
	if f.Run == nil {
		t.Fatalf("%s: no recorded run", id)
	}
	run := *f.Run
	run.Records = append([]record.Record(nil), f.Run.Records...)
	changed := false
	for i, r := range run.Records {
		if r.Case == c && r.Variant == variant {
			run.Records[i].MedianMS, changed = median(f.Run), true
		}
	}
	if !changed {
		t.Fatalf("%s: no record of %q in case %q to change", id, variant, c)
	}
	if md := lab.Readings(lab.Figures{Run: &run}, f, false, rs...); !strings.Contains(md, "did **not** hold") {
		t.Errorf("%s, the cell says:\n%s", what, md)
	}
}

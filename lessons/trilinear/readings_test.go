package trilinear

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// readingsCells are the readings the notebook's cells show, by the function that gives them.
var readingsCells = map[string][]lab.Reading{
	"ForwardReadings":  ForwardReadings(),
	"Float4Readings":   Float4Readings(),
	"HalfReadings":     HalfReadings(),
	"BackwardReadings": BackwardReadings(),
}

// Every reading of the notebook finds its figure in the recorded run and profiles (results/), the
// no-GPU mode's cell states each one, and a claim always comes with its test.
func TestReadingsFindTheRecordedRun(t *testing.T) {
	f := lab.RecordedFigures(ID)
	if f.Run == nil || f.Profiles == nil {
		t.Fatalf("results/ has no recorded run or no recorded profiles of %s", ID)
	}
	for cell, rs := range readingsCells {
		if len(rs) == 0 {
			t.Errorf("%s: no readings", cell)
		}
		for _, r := range rs {
			v, ok := r.Value(f)
			if !ok {
				t.Errorf("%s: %q finds no figure in the recorded run", cell, r.What)
				continue
			}
			if (r.Claim == "") != (r.Holds == nil) {
				t.Errorf("%s: %q has a claim without its test, or a test without its claim", cell, r.What)
			}
			if r.Holds != nil {
				t.Logf("%s: %s = %s; the claim held: %v", cell, r.What, r.Format(v), r.Holds(v))
			}
		}
		md := lab.Readings(f, f, false, rs...)
		if !strings.Contains(md, "recorded run") || strings.Count(md, "\n* ") != len(rs) || strings.Contains(md, "not in this run") {
			t.Errorf("%s: the cell says:\n%s", cell, md)
		}
	}
}

// A claim that the run contradicts is said not to hold: the readings judge the figures, they do not
// assume them.
func TestReadingsSayWhenAClaimFails(t *testing.T) {
	f := lab.RecordedFigures(ID)
	if f.Run == nil {
		t.Fatal("no recorded run")
	}
	run := *f.Run
	run.Records = append([]record.Record(nil), f.Run.Records...)
	for i, r := range run.Records {
		if r.Case == fwd && r.Variant == "4 half" {
			run.Records[i].MedianMS = run.Median(fwd, ProfiledStep)
		}
	}
	md := lab.Readings(lab.Figures{Run: &run}, f, false, HalfReadings()[0])
	if !strings.Contains(md, "did **not** hold") {
		t.Errorf("half as slow as float32, the cell says:\n%s", md)
	}
}

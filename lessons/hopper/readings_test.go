package hopper

import (
	"slices"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/nsight"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// readingsCells are the readings the notebook's cells show, by the function that gives them.
var readingsCells = map[string][]lab.Reading{
	"LadderReadings":      LadderReadings(),
	"SpecializedReadings": SpecializedReadings(),
	"Float32Readings":     Float32Readings(),
	"ConvReadings":        ConvReadings(),
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
			if !ok && profiledLater(r, f) {
				t.Logf("%s: %q is not in the recorded profile, which predates its metric; the 08 target collects it", cell, r.What)
				continue
			}
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
		if !strings.Contains(md, "recorded run") || strings.Count(md, "\n* ") != len(rs) || strings.Contains(md, "not in this run") && !profiledLater(lab.Reading{}, f) {
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
		if r.Case == FP16 && r.Variant == "4 clusters, persistent" {
			run.Records[i].MedianMS = 2 * run.Median(FP16, VendorName(FP16))
		}
	}
	md := lab.Readings(lab.Figures{Run: &run}, f, false, SpecializedReadings()[1])
	if !strings.Contains(md, "did **not** hold") {
		t.Errorf("step 4 at half cuBLAS's speed, the cell says:\n%s", md)
	}
}

// profiledLater says whether a reading without a figure cites a metric the recorded profile
// predates: the profile lacks some metric of ProfileMetrics that the lesson's target collects now
// (nsight.Targets), so it was recorded before the target asked for it.
func profiledLater(_ lab.Reading, f lab.Figures) bool {
	tg := nsight.ForStep(ID, ProfiledStep, nil)
	for _, m := range ProfileMetrics {
		if _, ok := lab.ProfileMetric(ProfiledStep, m)(f); !ok && slices.Contains(tg.Metrics, m) {
			return true
		}
	}
	return false
}

// Every metric the readings cite is one the lesson's target collects, or one every profile has (a
// section's line, a stall reason).
func TestReadingsCiteCollectedMetrics(t *testing.T) {
	tg := nsight.ForStep(ID, ProfiledStep, nil)
	if tg.Question == "" {
		t.Fatalf("no target of its own for %s", ProfiledStep)
	}
	for _, m := range ProfileMetrics {
		if slices.Contains(tg.Metrics, m) || m == CyclesPerIssue || strings.HasPrefix(m, "smsp__average_warps_issue_stalled_") {
			continue
		}
		t.Errorf("the readings cite %s, which the %s target does not collect", m, ID)
	}
}

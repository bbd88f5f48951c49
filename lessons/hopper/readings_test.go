package hopper

import (
	"slices"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"

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

// Every reading of the notebook finds its figure in the recorded run and profiles (labtest.ReadingsFound).
func TestReadingsFindTheRecordedRun(t *testing.T) { labtest.ReadingsFound(t, ID, readingsCells) }

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

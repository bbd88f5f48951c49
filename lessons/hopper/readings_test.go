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
	labtest.ClaimFailsWhen(t, ID, FP16, "4 clusters, persistent", func(run *record.Run) float64 { return 2 * run.Median(FP16, VendorName(FP16)) },
		"step 4 at half cuBLAS's speed", SpecializedReadings()[1])
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

package conv

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// readingsCells are the readings the notebook's cells show, by the function that gives them.
var readingsCells = map[string][]lab.Reading{
	"CUDACoreReadings":   CUDACoreReadings(),
	"TensorCoreReadings": TensorCoreReadings(),
	"FusedReadings":      FusedReadings(),
	"DeepReadings":       DeepReadings(),
	"SweepReadings":      SweepReadings(),
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
		if r.Case == CaseAlexNet && r.Variant == "3 implicit GEMM" {
			run.Records[i].MedianMS = 100 * run.Median(CaseAlexNet, "2 shared tiles")
		}
	}
	md := lab.Readings(lab.Figures{Run: &run}, f, false, CUDACoreReadings()[1])
	if !strings.Contains(md, "did **not** hold") {
		t.Errorf("step 3 made 100x slower than step 2, the cell says:\n%s", md)
	}
}

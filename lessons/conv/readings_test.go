package conv

import (
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
	labtest.ClaimFailsWhen(t, ID, CaseAlexNet, "3 implicit GEMM", func(run *record.Run) float64 { return 100 * run.Median(CaseAlexNet, "2 shared tiles") },
		"step 3 made 100x slower than step 2", CUDACoreReadings()[1])
}

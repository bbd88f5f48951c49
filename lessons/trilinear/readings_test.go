package trilinear

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"

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

// Every reading of the notebook finds its figure in the recorded run and profiles (labtest.ReadingsFound).
func TestReadingsFindTheRecordedRun(t *testing.T) { labtest.ReadingsFound(t, ID, readingsCells) }

// A claim that the run contradicts is said not to hold: the readings judge the figures, they do not
// assume them.
func TestReadingsSayWhenAClaimFails(t *testing.T) {
	labtest.ClaimFailsWhen(t, ID, fwd, "4 half", func(run *record.Run) float64 { return run.Median(fwd, ProfiledStep) },
		"half as slow as float32", HalfReadings()[0])
}

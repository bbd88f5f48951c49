package oneflow

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// Every reading of the notebook finds its figure in the recorded run and profiles (labtest.ReadingsFound).
func TestReadingsFindTheRecordedFigures(t *testing.T) {
	labtest.ReadingsFound(t, ID, map[string][]lab.Reading{
		"ElementwiseReadings": ElementwiseReadings(),
		"AtomicReadings":      AtomicReadings(),
		"UpsampleReadings":    UpsampleReadings(),
		"ProfileReadings":     ProfileReadings(),
	})
}

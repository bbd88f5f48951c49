package trilinear

import (
	"strings"
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

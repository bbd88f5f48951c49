package giou

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// readingsCells are the readings the notebook's cells show, by the function that gives them.
var readingsCells = map[string][]lab.Reading{
	"PyTorchReadings":   PyTorchReadings(),
	"LaunchReadings":    LaunchReadings(),
	"SkipReadings":      SkipReadings(),
	"BlockMeanReadings": BlockMeanReadings(),
	"TrainReadings":     TrainReadings(),
	"TransferReadings":  TransferReadings(),
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
		if r.Case == fw && r.Variant == "2 article skip" {
			run.Records[i].MedianMS = 2 * run.Median(fw, ProfiledStep)
		}
	}
	md := lab.Readings(lab.Figures{Run: &run}, f, false, SkipReadings()...)
	if !strings.Contains(md, "did **not** hold") {
		t.Errorf("the skip made twice as slow, the cell says:\n%s", md)
	}
}

package lab

import (
	"reflect"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/record"
)

func TestPlanAgainstARun(t *testing.T) {
	run := &record.Run{Records: []record.Record{
		{Case: "add", Shape: CopyShape()}, {Case: "add", Shape: "n=64"}, {Case: "add", Shape: "n=64", Variant: "b"},
		{Case: "sweep", Shape: "n=8"}, {Case: "sweep", Shape: "n=16"}, {Case: "add", Shape: "n=16"},
		{Case: "unavailable"}, // a baseline that could not run: no shape
	}}
	plan := []Point{Headline("add", CopyShape()), Headline("add", "n=64"), SweepPoint("sweep", "n=8"), Headline("method", "n=64")}
	if got, want := OutsidePlan(run, plan), []string{"add @ n=16", "sweep @ n=16"}; !reflect.DeepEqual(got, want) {
		t.Errorf("OutsidePlan = %q, want %q", got, want)
	}
	if got, want := MissingFromRun(run, plan), []string{"method @ n=64"}; !reflect.DeepEqual(got, want) {
		t.Errorf("MissingFromRun = %q, want %q", got, want)
	}
	r := Restrict(run, plan)
	if len(r.Records) != 4 || len(run.Records) != 7 {
		t.Errorf("Restrict kept %d records (want 4) and left the run with %d (want 7)", len(r.Records), len(run.Records))
	}
	if h := HeadlinePoints(plan); len(h) != 3 || h[SweepPoint("sweep", "n=8")] {
		t.Errorf("HeadlinePoints = %v", h)
	}
}

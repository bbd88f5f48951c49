package oneflow

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
)

// Every reading of the notebook finds its figure in the recorded run, and every profile reading in
// the recorded profiles alone (results/), so a renamed variant, case or profiled step fails here
// rather than printing "not in this run".
func TestReadingsFindTheRecordedFigures(t *testing.T) {
	rec := lab.RecordedFigures(ID)
	if rec.Run == nil || rec.Profiles == nil {
		t.Fatalf("%s: recorded run %v, recorded profiles %v: both are needed", ID, rec.Run != nil, rec.Profiles != nil)
	}
	profiles := lab.Figures{Profiles: rec.Profiles}
	for _, c := range []struct {
		name string
		rs   []lab.Reading
		f    lab.Figures
	}{
		{"ElementwiseReadings", ElementwiseReadings(), rec},
		{"AtomicReadings", AtomicReadings(), rec},
		{"UpsampleReadings", UpsampleReadings(), rec},
		{"ProfileReadings", ProfileReadings(), profiles},
	} {
		for _, r := range c.rs {
			if _, ok := r.Value(c.f); !ok {
				t.Errorf("%s: %q is not in the recorded figures", c.name, r.What)
			}
		}
		md := lab.Readings(c.f, c.f, false, c.rs...)
		t.Log(md)
		if strings.Contains(md, "not in this run") {
			t.Errorf("%s:\n%s", c.name, md)
		}
	}
}

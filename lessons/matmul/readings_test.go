package matmul

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
)

// Every reading of the notebook finds its figure in the recorded run and profiles (results/), so a
// renamed variant, case or profiled step fails here rather than printing "not in this run".
func TestReadingsFindTheRecordedFigures(t *testing.T) {
	rec := lab.RecordedFigures(ID)
	if rec.Run == nil || rec.Profiles == nil {
		t.Fatalf("%s: recorded run %v, recorded profiles %v: both are needed", ID, rec.Run != nil, rec.Profiles != nil)
	}
	for name, rs := range map[string][]lab.Reading{"BankReadings": BankReadings(), "TensorReadings": TensorReadings(), "SplitReadings": SplitReadings(), "LadderReadings": LadderReadings()} {
		for _, r := range rs {
			if _, ok := r.Value(rec); !ok {
				t.Errorf("%s: %q is not in the recorded figures", name, r.What)
			}
		}
		md := lab.Readings(rec, rec, false, rs...)
		t.Log(md)
		if strings.Contains(md, "not in this run") {
			t.Errorf("%s:\n%s", name, md)
		}
	}
}

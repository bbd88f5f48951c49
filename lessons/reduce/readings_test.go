package reduce

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
)

// Every reading of both notebooks finds its figure in the recorded run (results/04_reductions.json)
// or the recorded profile (results/profiles/04_reductions.json), and every claim has its test: a
// readings cell without a GPU states each of them, and none says "not in this run".
func TestReadingsFindTheRecordedFigures(t *testing.T) {
	rec := lab.RecordedFigures(ID)
	if rec.Run == nil || rec.Profiles == nil {
		t.Fatalf("the recorded run or profile of %s is missing: run %v, profiles %v", ID, rec.Run != nil, rec.Profiles != nil)
	}
	sets := map[string][]lab.Reading{"softmax": SoftmaxReadings(), "cluster profile": ClusterProfileReadings(), "layer norm": LayerNormReadings()}
	for name, rs := range sets {
		if len(rs) == 0 {
			t.Errorf("%s: no readings", name)
		}
		for _, r := range rs {
			v, ok := r.Value(rec)
			if !ok {
				t.Errorf("%s: %q is not in the recorded run", name, r.What)
				continue
			}
			if v <= 0 {
				t.Errorf("%s: %q reads %v", name, r.What, v)
			}
			if (r.Claim == "") != (r.Holds == nil) {
				t.Errorf("%s: %q has a claim without its test, or a test without its claim", name, r.What)
			}
		}
		md := lab.Readings(rec, rec, false, rs...)
		if strings.Contains(md, "not in this run") || !strings.Contains(md, "What the recorded run shows") {
			t.Errorf("%s: the readings cell says:\n%s", name, md)
		}
	}
	// Readings read the figures given, not a fixed list: a run without the records finds none.
	for _, r := range SoftmaxReadings() {
		if _, ok := r.Value(lab.Figures{}); ok {
			t.Errorf("%q found a figure in no run", r.What)
		}
	}
}

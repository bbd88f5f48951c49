//go:build nocuda

package lab

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/nsight"
	"github.com/cudalessons/cudalessons/helpers/show"
	"github.com/cudalessons/cudalessons/results"
)

// Without a GPU, profile readings state the recorded profiles under their own GPU and date (not
// the recorded run's), without loading the lesson's run; a lesson without recorded profiles says so.
func TestShowProfileReadingsStatesTheRecordedProfiles(t *testing.T) {
	env, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	f, err := nsight.Load(results.Profiles, "00_setup")
	if err != nil {
		t.Skipf("no recorded profile of 00_setup: %v", err)
	}
	var out bytes.Buffer
	old := show.Out
	show.Out = &out
	defer func() { show.Out = old }()
	r := Reading{What: "naive's DRAM throughput", Value: ProfileMetric("naive", "DRAM Throughput"), Format: Percent}
	if err := env.ShowProfileReadings(Lesson{ID: "00_setup"}, r); err != nil {
		t.Fatal(err)
	}
	label := f.Receipt.GPU + ", " + f.Receipt.Date[:10]
	for _, want := range []string{"recorded run shows", label, "naive's DRAM throughput: **"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the cell lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := env.ShowProfileReadings(Lesson{ID: "99_none"}, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "No profile of 99_none") {
		t.Errorf("no profile: %s", out.String())
	}
}

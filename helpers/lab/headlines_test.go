package lab

import (
	"strings"
	"testing"
)

// Select keeps the order asked for, and a name no reading has gives a reading with no figure that
// says so.
func TestSelect(t *testing.T) {
	one := func(Figures) (float64, bool) { return 1, true }
	rs := []Reading{{What: "a", Value: one}, {What: "b", Value: one}, {What: "c", Value: one}}
	got := Select(rs, "c", "a", "gone")
	if len(got) != 3 || got[0].What != "c" || got[1].What != "a" {
		t.Fatalf("Select: %+v", got)
	}
	if _, ok := got[2].Value(Figures{}); ok || !strings.Contains(got[2].What, "no reading of this name") {
		t.Errorf("a missing name reads %q with a figure: %v", got[2].What, ok)
	}
}

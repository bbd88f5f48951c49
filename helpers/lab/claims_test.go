package lab

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/nsight"
	"github.com/cudalessons/cudalessons/helpers/record"
)

func TestClaimTestsAndSweepRatio(t *testing.T) {
	if !AtLeast(1.5)(1.5) || AtLeast(1.5)(1.49) {
		t.Error("AtLeast(1.5) must take 1.5 and refuse 1.49")
	}
	if !Between(0.9, 1.1)(1) || Between(0.9, 1.1)(1.2) || Between(0.9, 1.1)(0.8) {
		t.Error("Between(0.9, 1.1) must take 1 and refuse 0.8 and 1.2")
	}
	run := &record.Run{Records: []record.Record{
		{Case: "sweep", Variant: "a", Size: 1, MedianMS: 4}, {Case: "sweep", Variant: "b", Size: 1, MedianMS: 2},
		{Case: "sweep", Variant: "a", Size: 2, MedianMS: 9}, {Case: "sweep", Variant: "b", Size: 2, MedianMS: 3},
	}}
	if v, ok := RatioAt("sweep", "a", "b", 2)(Figures{Run: run}); !ok || v != 3 {
		t.Errorf("RatioAt at size 2: %v, %v; want 3", v, ok)
	}
	if _, ok := RatioAt("sweep", "a", "b", 4)(Figures{Run: run}); ok {
		t.Error("RatioAt at a size the run lacks must find nothing")
	}
	if _, ok := RatioAt("sweep", "a", "b", 1)(Figures{}); ok {
		t.Error("RatioAt without a run must find nothing")
	}
	f := Figures{Profiles: &nsight.File{Receipt: nsight.Receipt{GPU: "NVIDIA H200", Date: "2026-11-27T11:35:13Z"}}}
	if got := ProfiledOn(f); got != "profiled on NVIDIA H200, 2026-11-27" {
		t.Errorf("ProfiledOn: %q", got)
	}
	if ProfiledOn(Figures{}) != "" {
		t.Error("ProfiledOn without profiles must say nothing")
	}
}

package lab

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/nsight"
	"github.com/cudalessons/cudalessons/helpers/record"
)

func readingsRun(name string, eager, mine float64) *record.Run {
	run := &record.Run{Lesson: "xx", Receipt: record.Receipt{Device: gpu.DeviceInfo{Name: name}, Date: "2026-11-27T10:00:00Z"}}
	run.Add(record.Record{Case: "c", Variant: "eager", Kind: "baseline", MedianMS: eager})
	run.Add(record.Record{Case: "c", Variant: "mine", Kind: "kernel", MedianMS: mine, PctBW: 91.5})
	return run
}

func TestReadingsStateTheFigureAndTheClaim(t *testing.T) {
	faster := Reading{What: "mine against eager", Value: Ratio("c", "eager", "mine"), Format: Speedup,
		Claim: "faster than eager", Holds: Above(1), Why: "Look at the table above."}
	share := Reading{What: "mine's share of the copy", Value: BandwidthShare("c", "mine"), Format: Percent}
	missing := Reading{What: "absent", Value: Median("c", "nobody"), Format: Millis}
	shown := Figures{Run: readingsRun("GPU A", 2, 1)}
	recorded := Figures{Run: readingsRun("GPU B", 1, 2)}

	md := Readings(shown, recorded, true, faster, share, missing)
	for _, want := range []string{"run on this page", "GPU A, 2026-11-27", "**2.00x**", "the recorded run (GPU B, 2026-11-27) had 0.50x",
		"faster than eager, held on this GPU", "**91.5%**", "absent: not in this run"} {
		if !strings.Contains(md, want) {
			t.Errorf("GPU readings lack %q:\n%s", want, md)
		}
	}
	md = Readings(recorded, recorded, false, faster)
	for _, want := range []string{"recorded run shows", "not one measured here", "**0.50x**", "did **not** hold in the recorded run", "Look at the table above."} {
		if !strings.Contains(md, want) {
			t.Errorf("no-GPU readings lack %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "had 0.50x") {
		t.Errorf("no-GPU readings set the recorded run beside itself:\n%s", md)
	}
}

func TestProfileMetricReadsTheStep(t *testing.T) {
	f := Figures{Profiles: &nsight.File{Lesson: "xx", Receipt: nsight.Receipt{GPU: "GPU A", Date: "2026-11-27T10:00:00Z"}, Profiles: []nsight.Profile{
		{Step: "naive", Kernel: nsight.Kernel{Metrics: []nsight.Metric{{Name: "dram__throughput.avg.pct_of_peak_sustained_elapsed", Value: 40, OK: true}}}},
		{Step: "the original float4", Kernel: nsight.Kernel{Metrics: []nsight.Metric{{Name: "dram__throughput.avg.pct_of_peak_sustained_elapsed", Value: 92, OK: true}}}},
	}}}
	for step, want := range map[string]float64{"naive": 40, "float4": 92} {
		v, ok := ProfileMetric(step, "dram__throughput.avg.pct_of_peak_sustained_elapsed")(f)
		if !ok || v != want {
			t.Errorf("ProfileMetric(%s) = %v, %v; want %v", step, v, ok, want)
		}
	}
	if _, ok := ProfileMetric("grid-stride", "dram__throughput.avg.pct_of_peak_sustained_elapsed")(f); ok {
		t.Error("ProfileMetric found a step that was not profiled")
	}
	if got := f.Label(); got != "GPU A, 2026-11-27" {
		t.Errorf("Label = %q", got)
	}
}

func TestKeepProfileKeepsTheOriginalStepsOnly(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	rec := nsight.Receipt{GPU: "GPU A", Date: "2026-11-27T10:00:00Z"}
	if err := KeepProfile(&nsight.File{Lesson: "xx", Receipt: rec, Profiles: []nsight.Profile{{Step: "the original 6"}, {Step: "your 6"}}}); err != nil {
		t.Fatal(err)
	}
	if err := KeepProfile(&nsight.File{Lesson: "xx", Receipt: rec, Profiles: []nsight.Profile{{Step: "the original 7"}}}); err != nil {
		t.Fatal(err)
	}
	e := &Env{Mode: GPUMode, Receipt: record.Receipt{Device: gpu.DeviceInfo{Name: "GPU A"}}}
	f := e.shownProfiles("xx")
	if f == nil {
		t.Fatal("the kept profile was not found")
	}
	var steps []string
	for _, p := range f.Profiles {
		steps = append(steps, p.Step)
	}
	if strings.Join(steps, ",") != "6,7" {
		t.Errorf("kept steps %v, want [6 7] (the reader's code is not kept; earlier steps stay)", steps)
	}
}

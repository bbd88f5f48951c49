package lab

import (
	"math"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// WithTiming puts a tf32 record's share against the TF32 tensor peak (and names it), a float32
// one's against the FP32 peak; TryTable and PeakBars show them so.
func TestTensorStepsAgainstTheirPeak(t *testing.T) {
	env := &Env{Receipt: record.Receipt{Device: gpu.DeviceInfo{Name: "NVIDIA H100 80GB HBM3"}, PeakGFLOPS: 66908, CopyGBps: 2951}}
	w := bench.Work{FLOPs: 14.5e9, Bytes: 1e7}
	tm := bench.Timing{Median: 0.0947, Min: 0.09, Max: 0.1}
	tc := env.WithTiming(record.Record{Case: "forward", Variant: "v8", DType: "tf32"}, w, tm)
	want := 100 * tc.GFLOPs / 494700
	if math.Abs(tc.PctFLOPs-want) > 1e-9 || tc.PctFLOPs > 100 || tc.PeakOf != "TF32 tensor peak (datasheet)" {
		t.Errorf("tf32: %.1f%% of %q; want %.1f%% of the TF32 tensor peak", tc.PctFLOPs, tc.PeakOf, want)
	}
	f32 := env.WithTiming(record.Record{Case: "forward", Variant: "v4", DType: "float32"}, w, bench.Timing{Median: 0.423})
	if math.Abs(f32.PctFLOPs-100*f32.GFLOPs/66908) > 1e-9 || f32.PeakOf != "FP32 peak" {
		t.Errorf("float32: %.1f%% of %q", f32.PctFLOPs, f32.PeakOf)
	}
	copyRec := env.CopyRecord("add")
	if copyRec.PeakOf != "" {
		t.Errorf("a copy has no FLOPs and names no peak: %q", copyRec.PeakOf)
	}
	tab, _ := TryTable("v8", []record.Record{tc}, []record.Record{tc}, env.Receipt)
	if got := tab.Rows[0][6]; !strings.Contains(got, "of TF32 tensor peak (datasheet)") || strings.Contains(got, "FP32 peak") {
		t.Errorf("TryTable's share of a tf32 step: %q", got)
	}
	if _, err := PeakBars("forward", env.Receipt, []record.Record{f32, tc}, func(r record.Record) string { return r.Variant }); err != nil {
		t.Error(err)
	}
}

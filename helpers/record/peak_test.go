package record

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/gpu"
)

// h100 is the recorded run's receipt in short: its GPU and its FP32 peak from the clock.
var h100 = Receipt{Device: gpu.DeviceInfo{Name: "NVIDIA H100 80GB HBM3"}, PeakGFLOPS: 66908}

func TestPeakForMatchesTheFormat(t *testing.T) {
	for _, c := range []struct {
		dtype, format string
		gflops        float64
		split         bool
	}{
		{"float32", "", 66908, false}, {"float16", "", 66908, false}, {"bfloat16", "", 66908, false},
		{"float16 (half accumulator)", "", 66908, false},
		{"tf32", "tf32", 494700, false}, {"3xtf32", "tf32", 494700, true},
		{"fp16", "fp16", 989400, false}, {"fp16x3", "fp16", 989400, true}, {"bf16x3", "bf16", 989400, true},
	} {
		p := h100.PeakFor(c.dtype)
		if p.Format != c.format || math.Abs(p.GFLOPS-c.gflops) > 0.5 || p.Split != c.split || p.Missing != "" {
			t.Errorf("PeakFor(%q) = %+v; want format %q, %.0f GFLOP/s, split %v", c.dtype, p, c.format, c.gflops, c.split)
		}
	}
	if got := h100.PeakFor("tf32").Label(); got != "TF32 tensor peak (datasheet)" {
		t.Errorf("the TF32 label: %q", got)
	}
	if got := h100.PeakFor("fp16x3").Label(); !strings.Contains(got, "FP16 tensor peak (datasheet") || !strings.Contains(got, "33%") {
		t.Errorf("a split's label must say its ceiling is a third: %q", got)
	}
	if got := h100.PeakFor("float32").Label(); got != "FP32 peak" {
		t.Errorf("the FP32 label: %q", got)
	}
}

// A GPU with no such tensor cores, or none the profiles know, has no figure and says why: never the
// FP32 peak in its place.
func TestPeakForSaysWhatIsNotKnown(t *testing.T) {
	t4 := Receipt{Device: gpu.DeviceInfo{Name: "Tesla T4"}, PeakGFLOPS: 8100}
	if p := t4.PeakFor("tf32"); p.GFLOPS != 0 || !strings.Contains(p.Missing, "no TF32 tensor cores") {
		t.Errorf("T4, tf32: %+v", p)
	}
	if p := t4.PeakFor("fp16"); p.GFLOPS != 65000 {
		t.Errorf("T4, fp16: %+v", p)
	}
	odd := Receipt{Device: gpu.DeviceInfo{Name: "NVIDIA L40S"}, PeakGFLOPS: 91600}
	p := odd.PeakFor("tf32")
	if p.GFLOPS != 0 || !strings.Contains(p.Missing, "NVIDIA L40S") {
		t.Errorf("a GPU with no profile, tf32: %+v", p)
	}
	if _, _, ok := odd.FLOPShare(Record{DType: "tf32", GFLOPs: 50000}); ok {
		t.Error("a share of an unknown tensor peak was given")
	}
	if pct, _, ok := odd.FLOPShare(Record{DType: "float32", GFLOPs: 45800}); !ok || math.Abs(pct-50) > 1e-9 {
		t.Errorf("float32 on a GPU with no profile: %.1f%%, %v; want 50%% of its FP32 peak", pct, ok)
	}
}

// A tf32 record's share is of the TF32 peak, recomputed from its GFLOP/s: a receipt written before
// tensor peaks (pct_peak_flops of the FP32 peak, no pct_peak_flops_of) loads and shows right.
func TestFLOPShareOfAnOldReceipt(t *testing.T) {
	old := `{"lesson":"01_rwkv","receipt":{"device":{"name":"NVIDIA H100 80GB HBM3"},"peak_fp32_gflops":66908},
		"records":[{"case":"forward","variant":"v8 tensor core mma","dtype":"tf32","median_ms":0.0947,"gflops":153283,"pct_peak_flops":229.1}]}`
	run, err := decode([]byte(old), "old.json")
	if err != nil {
		t.Fatal(err)
	}
	r := run.Records[0]
	pct, peak, ok := run.Receipt.FLOPShare(r)
	if !ok || peak.Format != "tf32" || math.Abs(pct-100*153283/494700.0) > 1e-9 || pct > 100 {
		t.Errorf("share of the old tf32 record: %.1f%% of %s (ok %v); want %.1f%% of the TF32 peak", pct, peak.Name(), ok, 100*153283/494700.0)
	}
	data, err := json.Marshal(r)
	if err != nil || strings.Contains(string(data), "pct_peak_flops_of") {
		t.Errorf("an old record gained a peak name on the way: %s", data)
	}
}

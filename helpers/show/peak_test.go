package show

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/record"
)

var h100 = record.Receipt{Device: gpu.DeviceInfo{Name: "NVIDIA H100 80GB HBM3"}, PeakGFLOPS: 66908}

// A table of CUDA-core steps keeps its "% FP32 peak" column; one with a tensor-core step names each
// cell's peak, the tf32 one the TF32 tensor peak, and its caption gives the datasheet figures.
func TestPeakColumnNamesEachPeak(t *testing.T) {
	f32 := record.Record{Variant: "v4", DType: "float32", GFLOPs: 34300, MedianMS: 1}
	tf32 := record.Record{Variant: "v8", DType: "tf32", GFLOPs: 153283, MedianMS: 1}
	split := record.Record{Variant: "9", DType: "fp16x3", GFLOPs: 93700, MedianMS: 1}
	h, cell := PeakColumn(h100, []record.Record{f32})
	if h != "% FP32 peak" || cell(f32) != "51.3%" {
		t.Errorf("CUDA cores only: %q, %q", h, cell(f32))
	}
	h, cell = PeakColumn(h100, []record.Record{f32, tf32, split})
	if h != "% of peak" || cell(f32) != "51.3% of FP32 peak" || cell(tf32) != "31.0% of TF32 tensor peak (datasheet)" {
		t.Errorf("with tensor cores: %q, %q, %q", h, cell(f32), cell(tf32))
	}
	if c := cell(split); !strings.HasPrefix(c, "9.5% of FP16 tensor peak (datasheet") || !strings.Contains(c, "33%") {
		t.Errorf("a split's cell: %q", c)
	}
	note := PeakNote(h100, []record.Record{f32, tf32, split})
	for _, want := range []string{"NVIDIA H100 SXM", "TF32 494.7", "FP16 989.4", "FP32 peak (66.9", "a third"} {
		if !strings.Contains(note, want) {
			t.Errorf("the caption's note lacks %q: %s", want, note)
		}
	}
	if PeakNote(h100, []record.Record{f32}) != "" {
		t.Error("a note for a table with no tensor-core step")
	}
	t4 := record.Receipt{Device: gpu.DeviceInfo{Name: "Tesla T4"}, PeakGFLOPS: 8100}
	if c := PeakShare(t4, tf32); !strings.HasPrefix(c, "n/a: ") || !strings.Contains(c, "no TF32 tensor cores") {
		t.Errorf("a tf32 record on a T4: %q", c)
	}
	if got := Sentences("One.", "", " Two. "); got != "One. Two." {
		t.Errorf("Sentences: %q", got)
	}
}

// A share is of the step's own ceiling: a bandwidth-bound step's of the copy bandwidth, a TF32
// step's of the TF32 tensor peak (never the FP32 peak, even on a receipt that wrote its PctFLOPs
// against it), a launch-bound kernel's "—" with the caption's note, never "0.0%".
func TestShareCellIsOfTheStepsOwnCeiling(t *testing.T) {
	bw := record.Record{DType: "float32", MedianMS: 0.1, GBps: 3000, PctBW: 92.4, GFLOPs: 30, PctFLOPs: 0.04}
	tf32 := record.Record{DType: "tf32", MedianMS: 1, GBps: 800, PctBW: 24, GFLOPs: 153283, PctFLOPs: 229.1} // an old receipt's % of FP32
	giou := record.Record{DType: "float32", MedianMS: 0.0066, GBps: 11, PctBW: 0.349, GFLOPs: 12, PctFLOPs: 0.018}
	for _, c := range []struct {
		r    record.Record
		want string
	}{
		{bw, "92.4% of copy BW"}, {tf32, "31.0% of TF32 tensor peak (datasheet)"}, {giou, "—"}, {record.Record{DType: "float32"}, "n/a"},
	} {
		if got := ShareCell(h100, c.r); got != c.want {
			t.Errorf("%+v: %q, want %q", c.r, got, c.want)
		}
	}
	if n := ShareNote(h100, []record.Record{bw, giou}); !strings.Contains(n, "under 1% of both the copy bandwidth and the peak") {
		t.Errorf("note: %q", n)
	}
	if n := ShareNote(h100, []record.Record{bw, tf32}); n != "" {
		t.Errorf("a note with no \"—\" cell: %q", n)
	}
	t4 := record.Receipt{Device: gpu.DeviceInfo{Name: "Tesla T4"}, PeakGFLOPS: 8100}
	if c := ShareCell(t4, tf32); !strings.HasPrefix(c, "n/a: ") {
		t.Errorf("TF32 on a T4: %q", c)
	}
	tab := Records("forward", []record.Record{bw, giou}, h100)
	if !strings.Contains(tab.Text(), "share of its ceiling") || strings.Contains(tab.Text(), "0.0%") || !strings.Contains(tab.Caption, "bound by launches") {
		t.Errorf("records table:\n%s", tab.Text())
	}
}

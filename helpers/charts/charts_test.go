package charts

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

func TestChartsRender(t *testing.T) {
	bars, err := Bars("time per step", "ms", []string{"naive", "shared", "float4"},
		[]Series{{"forward", []float64{45, 17, math.NaN()}}, {"backward", []float64{84, 43, 31}}}, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := Lines("sweep", "T", "ms", []Line{{"v0", []float64{64, 128, 256}, []float64{1, 4, 16}}}, true, true)
	if err != nil {
		t.Fatal(err)
	}
	roof, err := Roofline("roofline", 3000, 60000, []Point{{"add", 1.0 / 12, 250}, {"conv", 100, 20000}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, p := range []any{bars, lines, roof} {
		_ = i
		_ = p
	}
	svg, err := SVG(bars)
	if err != nil || !strings.HasPrefix(strings.TrimSpace(svg), "<?xml") || !strings.Contains(svg, "float4") {
		t.Errorf("bars SVG: err %v, starts %q", err, svg[:min(40, len(svg))])
	}
	if err := Save(lines, filepath.Join(dir, "lines.png")); err != nil {
		t.Error(err)
	}
	if svg, err := SVG(roof); err != nil || !strings.Contains(svg, "3000 GB/s") {
		t.Errorf("roofline SVG lacks its legend: %v", err)
	}
}

func TestBarsRejectsRaggedSeries(t *testing.T) {
	if _, err := Bars("x", "y", []string{"a", "b"}, []Series{{"s", []float64{1}}}, false, 0); err == nil {
		t.Error("a series shorter than the labels was accepted")
	}
}

// labelAxis says which axis of a bar chart carries the labels: "x" (upright bars) or "y".
func labelAxis(p *plot.Plot, first string) string {
	for _, tk := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
		if tk.Label == first {
			return "x"
		}
	}
	return "y"
}

// Short labels keep upright bars; long ones (notebook 03's error chart cut them off at the left and
// ran them into each other) lie horizontally with the labels down the left, the first at the top,
// and a legend of several series gets rows of its own above the bars.
func TestBarsTurnHorizontalForLongLabels(t *testing.T) {
	short, err := Bars("short", "%", []string{"naive", "grid-stride", "float4"}, []Series{{"f32", []float64{90, 92, 98}}}, false, 100)
	if err != nil {
		t.Fatal(err)
	}
	if labelAxis(short, "naive") != "x" {
		t.Error("three short labels were laid horizontally")
	}
	long := []string{"cuBLAS fp32 (torch.matmul, TF32 off)", "cuBLAS TF32 (torch.matmul, TF32 on)", "1 naive", "2 coalesced",
		"3 shared", "4 blocktile 1D", "5 blocktile 2D", "6 vectorized", "7 warp tile", "8 tensor core tf32", "8b 3xTF32 split", "9 fp16x3 split"}
	a, b := make([]float64, len(long)), make([]float64, len(long))
	for i := range long {
		a[i], b[i] = 1e-6*float64(i+1), 2e-6*float64(i+1)
	}
	p, err := Bars("error", "rel L2", long, []Series{{"run 1", a}, {"run 2", b}}, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	if labelAxis(p, long[0]) != "y" {
		t.Fatal("twelve long labels stayed under upright bars")
	}
	ticks := p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max)
	if len(ticks) != len(long) || ticks[len(long)-1].Label != long[0] || ticks[len(long)-1].Value != float64(len(long)-1) {
		t.Errorf("the labels down the left, first at the top: %v", ticks)
	}
	if p.Y.Max <= float64(len(long))-0.5 {
		t.Errorf("no rows above the bars for the legend: the category axis ends at %.1f for %d labels", p.Y.Max, len(long))
	}
	if svg, err := SVG(p); err != nil || !strings.Contains(svg, "cuBLAS fp32 (torch.matmul, TF32 off)") {
		t.Errorf("the horizontal chart does not render its labels: %v", err)
	}
	// Upright bars of several series leave the legend's height free above the tallest bar.
	up, err := Bars("up", "%", []string{"fwd", "bwd"}, []Series{{"a", []float64{100, 50}}, {"b", []float64{80, 102}}, {"c", []float64{1, 2}}}, false, 100)
	if err != nil {
		t.Fatal(err)
	}
	if up.Y.Max < 102*1.15 {
		t.Errorf("upright bars: the axis ends at %.0f, no room for a legend of three over 102", up.Y.Max)
	}
}

// Series that never share a label draw one centred bar per label (steps coloured by their peak).
func TestBarsOfDisjointSeries(t *testing.T) {
	if !disjoint([]Series{{"FP32", []float64{51, 0}}, {"TF32", []float64{0, 31}}}, 2) {
		t.Error("two series with a value each on different labels are not disjoint")
	}
	if disjoint([]Series{{"a", []float64{51, 1}}, {"b", []float64{0, 31}}}, 2) || disjoint([]Series{{"a", []float64{1, 2}}}, 2) {
		t.Error("series sharing a label, or a single series, taken as disjoint")
	}
	if _, err := Bars("none", "%", nil, nil, false, 0); err == nil {
		t.Error("a bar chart with no labels was drawn")
	}
}

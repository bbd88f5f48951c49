package charts

import (
	"html"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
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

// Every label of an SVG chart carries the width gonum/plot laid it out for (textLength), so a
// browser without Liberation Serif draws it in that width instead of clipping it at the edge (the
// labels down the left of horizontal bars were cut off in a browser with only DejaVu fonts); and the
// font names its metric twin and the generic serif as fallbacks.
func TestSVGLabelsKeepTheirWidths(t *testing.T) {
	title := "Conv, AlexNet's first layer (100 images)"
	labels := []string{"cuDNN fp32 (TF32 off)", "5 cp.async TF32, 2 buffers", "1 direct"}
	p, err := Bars(title, "median time (ms)", labels, []Series{{Name: "time", Values: []float64{1.1, 0.6, 7}}}, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Render(p, "svg")
	if err != nil {
		t.Fatal(err)
	}
	svg := string(b)
	texts := regexp.MustCompile(`<text [^>]*>([^<]*)</text>`).FindAllStringSubmatch(svg, -1)
	if len(texts) < len(labels)+2 {
		t.Fatalf("%d labels in the SVG, want at least the title, the axis label and %d bar labels", len(texts), len(labels))
	}
	width := regexp.MustCompile(`textLength="([0-9.]+)" lengthAdjust="spacingAndGlyphs"`)
	sawTitle := false
	for _, m := range texts {
		w := width.FindStringSubmatch(m[0])
		if w == nil {
			t.Errorf("label %q has no textLength: %s", m[1], m[0])
			continue
		}
		if m[1] == html.EscapeString(title) {
			sawTitle = true
			face := font.DefaultCache.Lookup(p.Title.TextStyle.Font, p.Title.TextStyle.Font.Size)
			want := face.Width(title).Points()
			if got, _ := strconv.ParseFloat(w[1], 64); math.Abs(got-want) > 0.01 {
				t.Errorf("the title's textLength is %v, want its width in the layout's font, %.2f", got, want)
			}
		}
	}
	if !sawTitle {
		t.Errorf("no label reads %q", title)
	}
	if strings.Contains(svg, "font-family:Liberation Serif;") || !strings.Contains(svg, "'Times New Roman',Times,serif") {
		t.Errorf("the labels' font has no fallbacks: %.300s", svg)
	}
	if _, err := pinLabelWidths([]byte(`<svg><text x="1">a</text></svg>`), nil); err == nil {
		t.Error("an SVG with more labels than were drawn was accepted")
	}
}

package charts

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
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

// Package charts draws the suite's figures with gonum/plot: bars per step (time, speedup, % of peak),
// lines over a size sweep on log axes, and a roofline. Every chart renders to SVG for notebooks and
// to PNG or SVG files for the reproduce command.
package charts

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Size of every chart.
var (
	Width  = 7 * vg.Inch
	Height = 4 * vg.Inch
)

// Series is one named set of bar values, one per group.
type Series struct {
	Name   string
	Values []float64
}

// Bars draws grouped bars: one group per label, one bar per series in each group. With logY the
// value axis is logarithmic (for times that span orders of magnitude). A reference line is drawn at
// refLine when it is positive (1 for a speedup, 100 for a percentage).
func Bars(title, yLabel string, labels []string, series []Series, logY bool, refLine float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = yLabel
	n := max(len(series), 1)
	w := vg.Points(math.Min(40, 300/float64(len(labels)*n+1)))
	// A log axis cannot start bars at zero, so a log bar chart draws log10(value/floor) on a
	// linear axis whose ticks are labelled with the values themselves.
	lo, hi := math.Inf(1), 0.0
	for _, s := range series {
		for _, v := range s.Values {
			if v > 0 && !math.IsInf(v, 0) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	floorExp := 0.0
	if logY && hi > 0 {
		floorExp = math.Floor(math.Log10(lo))
		p.Y.Tick.Marker = decadeTicks{floorExp}
	}
	scale := func(v float64) float64 {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			return 0 // not measured: no bar
		case !logY:
			return v
		case v <= 0:
			return 0
		}
		return math.Log10(v) - floorExp
	}
	for i, s := range series {
		if len(s.Values) != len(labels) {
			return nil, fmt.Errorf("bars %q: series %q has %d values for %d labels", title, s.Name, len(s.Values), len(labels))
		}
		vals := make(plotter.Values, len(s.Values))
		for j, v := range s.Values {
			vals[j] = scale(v)
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, fmt.Errorf("bars %q: %w", title, err)
		}
		b.Color = plotutil.Color(i)
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(float64(i)-float64(n-1)/2)
		p.Add(b)
		if len(series) > 1 {
			p.Legend.Add(s.Name, b)
		}
	}
	p.Legend.Top = true
	p.NominalX(labels...)
	p.X.Tick.Label.Rotation = 0
	if len(labels) > 5 {
		p.X.Tick.Label.Rotation = math.Pi / 8
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
	if refLine > 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: scale(refLine)}, {X: float64(len(labels)) - 0.5, Y: scale(refLine)}})
		if err == nil {
			l.Color = color.Gray{Y: 100}
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(l)
		}
	}
	p.Add(plotter.NewGrid())
	switch {
	case logY && hi > 0:
		p.Y.Max = math.Ceil(scale(math.Max(hi, refLine)) + 0.05)
	case hi > 0: // head room above the tallest bar for the legend
		p.Y.Max = math.Max(hi, refLine) * 1.25
	}
	return p, nil
}

// decadeTicks labels a linear axis of log10(value) - floorExp with the values, one tick per decade.
type decadeTicks struct{ floorExp float64 }

func (d decadeTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for k := math.Floor(min); k <= math.Ceil(max); k++ {
		ticks = append(ticks, plot.Tick{Value: k, Label: strconv.FormatFloat(math.Pow(10, k+d.floorExp), 'g', -1, 64)})
		for m := 2.0; m < 10; m++ {
			if v := k + math.Log10(m); v <= max {
				ticks = append(ticks, plot.Tick{Value: v})
			}
		}
	}
	return ticks
}

// Line is one named curve of (x, y) points.
type Line struct {
	Name string
	X, Y []float64
}

// Lines draws curves over a sweep, with optional log axes (a size sweep is read on log-log axes).
func Lines(title, xLabel, yLabel string, lines []Line, logX, logY bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	for i, l := range lines {
		if len(l.X) != len(l.Y) {
			return nil, fmt.Errorf("lines %q: %q has %d x and %d y values", title, l.Name, len(l.X), len(l.Y))
		}
		var pts plotter.XYs
		for j := range l.X {
			if math.IsNaN(l.Y[j]) || (logY && l.Y[j] <= 0) || (logX && l.X[j] <= 0) {
				continue
			}
			pts = append(pts, plotter.XY{X: l.X[j], Y: l.Y[j]})
		}
		if len(pts) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, fmt.Errorf("lines %q: %w", title, err)
		}
		line.Color = plotutil.Color(i)
		points.Color = plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		p.Legend.Add(l.Name, line, points)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	legendRoom(p, len(lines), logY)
	p.Add(plotter.NewGrid())
	return p, nil
}

// legendRoom raises the top of the y axis so that the data stays below a legend of n entries in
// the top corner: the legend takes about 6.5% of the height per entry (at most 60%), and the data
// keeps the rest (in log space on a log axis).
func legendRoom(p *plot.Plot, n int, logY bool) {
	lo, hi := p.Y.Min, p.Y.Max
	if n == 0 || !(hi > lo) || (logY && lo <= 0) {
		return
	}
	f := min(0.6, 0.065*float64(n+1))
	if logY {
		p.Y.Max = math.Exp(math.Log(lo) + (math.Log(hi)-math.Log(lo))/(1-f))
		return
	}
	p.Y.Max = lo + (hi-lo)/(1-f)
}

// Point is one kernel on a roofline: its arithmetic intensity (FLOPs per byte of DRAM traffic)
// and its achieved GFLOP/s.
type Point struct {
	Name      string
	Intensity float64
	GFLOPs    float64
}

// Roofline draws the bandwidth roof (copyGBps x intensity) and the compute roof (peakGFLOPS) on
// log-log axes, with each kernel as a labelled point. A kernel under the slanted roof is limited by
// memory, under the flat one by compute; its distance below the roof is what is left to win.
func Roofline(title string, copyGBps, peakGFLOPS float64, points []Point) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "arithmetic intensity (FLOP/byte)"
	p.Y.Label.Text = "GFLOP/s"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	lo, hi := 0.01, 1000.0
	for _, pt := range points {
		if pt.Intensity > 0 {
			lo, hi = math.Min(lo, pt.Intensity/2), math.Max(hi, pt.Intensity*2)
		}
	}
	ridge := peakGFLOPS / copyGBps
	roof := plotter.XYs{{X: lo, Y: copyGBps * lo}, {X: ridge, Y: peakGFLOPS}, {X: hi, Y: peakGFLOPS}}
	l, err := plotter.NewLine(roof)
	if err != nil {
		return nil, fmt.Errorf("roofline: %w", err)
	}
	l.Width = vg.Points(2)
	p.Add(l)
	p.Legend.Add(fmt.Sprintf("roof: %.0f GB/s copy, %.1f TFLOP/s FP32", copyGBps, peakGFLOPS/1e3), l)
	for i, pt := range points {
		if pt.Intensity <= 0 || pt.GFLOPs <= 0 {
			continue
		}
		s, err := plotter.NewScatter(plotter.XYs{{X: pt.Intensity, Y: pt.GFLOPs}})
		if err != nil {
			return nil, err
		}
		s.Color = plotutil.Color(i + 1)
		s.Shape = plotutil.Shape(i)
		s.Radius = vg.Points(4)
		p.Add(s)
		p.Legend.Add(pt.Name, s)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p, nil
}

// Render draws p in a format "svg" or "png" (or any gonum/plot knows) at the suite's size.
func Render(p *plot.Plot, format string) ([]byte, error) {
	wt, err := p.WriterTo(Width, Height, format)
	if err != nil {
		return nil, fmt.Errorf("rendering %q as %s: %w", p.Title.Text, format, err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("rendering %q as %s: %w", p.Title.Text, format, err)
	}
	return buf.Bytes(), nil
}

// SVG renders p as an SVG document.
func SVG(p *plot.Plot) (string, error) {
	b, err := Render(p, "svg")
	return string(b), err
}

// Save writes p to path; the extension (.svg, .png) picks the format.
func Save(p *plot.Plot, path string) error {
	format := strings.TrimPrefix(filepath.Ext(path), ".")
	b, err := Render(p, format)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

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
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
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
//
// The bars stand upright when every label fits under its group; when one would not (step names,
// variants with their dtype), they lie horizontally with the labels down the left, first label at
// the top, so that no label is cut off or runs into its neighbour. Series that never share a label
// (each label has a value in at most one of them: steps coloured by the peak they are measured
// against) draw one centred bar per label. The value axis leaves room for the legend, so the
// legend never covers a bar.
func Bars(title, yLabel string, labels []string, series []Series, logY bool, refLine float64) (*plot.Plot, error) {
	if len(labels) == 0 {
		return nil, fmt.Errorf("bars %q: no labels", title)
	}
	for _, s := range series {
		if len(s.Values) != len(labels) {
			return nil, fmt.Errorf("bars %q: series %q has %d values for %d labels", title, s.Name, len(s.Values), len(labels))
		}
	}
	p := plot.New()
	p.Title.Text = title
	horizontal := !labelsFit(p, labels)
	cat, val := &p.X, &p.Y
	if horizontal {
		cat, val = &p.Y, &p.X
	}
	val.Label.Text = yLabel
	// A log axis cannot start bars at zero, so a log bar chart draws log10(value/floor) on a
	// linear axis whose ticks are labelled with the values themselves. The floor is a decade at
	// least a fifth of a decade under the smallest value, so that its bar shows.
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
		floorExp = math.Floor(math.Log10(lo) - 0.2)
		val.Tick.Marker = decadeTicks{floorExp}
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
	n := len(labels)
	// pos is where label i sits on the category axis: left to right, or top to bottom.
	pos := func(i int) int {
		if horizontal {
			return n - 1 - i
		}
		return i
	}
	perGroup := len(series)
	if disjoint(series, n) {
		perGroup = 1
	}
	perGroup = max(perGroup, 1)
	for _, s := range series {
		if len(series) > 1 {
			p.Legend.Add(s.Name) // thumbnails come with the bars; here the legend's size is what counts
		}
	}
	legend := p.Legend.Rectangle(draw.Canvas{})
	p.Legend = plot.NewLegend()
	catLen := dataWidth(p, labels, horizontal)
	rows := n // category slots: the labels, and on a horizontal chart empty rows on top for the legend
	if horizontal {
		catLen = dataHeight(p)
		if len(series) > 1 {
			f := float64(legend.Max.Y-legend.Min.Y+vg.Points(6)) / float64(catLen)
			rows += int(math.Ceil(float64(n) * f / (1 - math.Min(f, 0.6))))
		}
		fitLabels(p, rows, catLen)
	}
	w := vg.Length(math.Min(float64(barMax(horizontal)), 0.8*float64(catLen)/float64(rows*perGroup)))
	for i, s := range series {
		vals := make(plotter.Values, n)
		for j, v := range s.Values {
			vals[pos(j)] = scale(v)
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, fmt.Errorf("bars %q: %w", title, err)
		}
		b.Horizontal = horizontal
		b.Color = plotutil.Color(i)
		b.LineStyle.Width = 0
		if perGroup > 1 {
			b.Offset = w * vg.Length(float64(i)-float64(perGroup-1)/2)
			if horizontal { // the first series on top within each group
				b.Offset = -b.Offset
			}
		}
		p.Add(b)
		if len(series) > 1 {
			p.Legend.Add(s.Name, b)
		}
	}
	p.Legend.Top = true
	p.Legend.YOffs = -vg.Points(2)
	names := make([]string, n)
	for i, l := range labels {
		names[pos(i)] = l
	}
	if horizontal {
		p.NominalY(names...)
	} else {
		p.NominalX(names...)
	}
	cat.Min, cat.Max = -0.5, float64(rows)-0.5
	if refLine > 0 {
		a, b := plotter.XY{X: -0.5, Y: scale(refLine)}, plotter.XY{X: float64(n) - 0.5, Y: scale(refLine)}
		if horizontal {
			a.X, a.Y, b.X, b.Y = a.Y, a.X, b.Y, b.X
		}
		l, err := plotter.NewLine(plotter.XYs{a, b})
		if err == nil {
			l.Color = color.Gray{Y: 100}
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(l)
		}
	}
	p.Add(plotter.NewGrid())
	top := 0.0
	switch {
	case logY && hi > 0:
		top = math.Ceil(scale(math.Max(hi, refLine)) + 0.05)
	case hi > 0:
		top = math.Max(hi, refLine) * 1.05
	}
	if top > 0 {
		val.Max = top
		if len(series) > 1 && !horizontal { // the legend sits in the top right corner: keep the bars under it
			room := (legend.Max.Y - legend.Min.Y + vg.Points(6)) / dataHeight(p)
			val.Max = math.Max(top, scale(math.Max(hi, refLine))/(1-math.Min(0.6, float64(room))))
		}
	}
	return p, nil
}

// barMax is the widest a bar gets.
func barMax(horizontal bool) vg.Length {
	if horizontal {
		return vg.Points(24)
	}
	return vg.Points(40)
}

// labelsFit reports whether every label fits under its group of upright bars, unrotated.
func labelsFit(p *plot.Plot, labels []string) bool {
	slot := dataWidth(p, labels, false) / vg.Length(len(labels))
	for _, l := range labels {
		if p.X.Tick.Label.Width(l) > 0.9*slot {
			return false
		}
	}
	return true
}

// dataWidth is about how wide the data area is: the chart less the value axis on the left (upright
// bars) or the labels (horizontal bars).
func dataWidth(p *plot.Plot, labels []string, horizontal bool) vg.Length {
	if !horizontal {
		return Width - 2*Margin - vg.Points(60)
	}
	widest := vg.Length(0)
	for _, l := range labels {
		widest = max(widest, p.Y.Tick.Label.Width(l))
	}
	return Width - 2*Margin - widest - vg.Points(20)
}

// dataHeight is about how high the data area is: the chart less the title and the bottom axis.
func dataHeight(p *plot.Plot) vg.Length {
	h := Height - 2*Margin - vg.Points(40)
	if p.Title.Text != "" {
		h -= p.Title.TextStyle.Height(p.Title.Text) + p.Title.Padding
	}
	return h
}

// fitLabels shrinks the labels down the left of a horizontal chart until n of them fit in length
// without touching (not below 6 points).
func fitLabels(p *plot.Plot, n int, length vg.Length) {
	f := &p.Y.Tick.Label.Font
	for f.Size > vg.Points(6) && p.Y.Tick.Label.Height("Mg")*1.1*vg.Length(n) > length {
		f.Size -= vg.Points(0.5)
	}
}

// disjoint reports whether the series never share a label: each of the n labels has a value in at
// most one series (and there are several series).
func disjoint(series []Series, n int) bool {
	if len(series) < 2 {
		return false
	}
	for j := 0; j < n; j++ {
		k := 0
		for _, s := range series {
			if v := s.Values[j]; v > 0 && !math.IsNaN(v) && !math.IsInf(v, 0) {
				k++
			}
		}
		if k > 1 {
			return false
		}
	}
	return true
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

// Margin is the blank border around every chart, so that no label touches the edge.
var Margin = vg.Points(4)

// Render draws p in a format "svg" or "png" (or any gonum/plot knows) at the suite's size, inside
// a Margin of its background colour. An SVG's labels keep the widths they were laid out with
// (pinLabelWidths), whatever font the browser has.
func Render(p *plot.Plot, format string) ([]byte, error) {
	if format == "svg" {
		return renderSVG(p)
	}
	c, err := draw.NewFormattedCanvas(Width, Height, format)
	if err != nil {
		return nil, fmt.Errorf("rendering %q as %s: %w", p.Title.Text, format, err)
	}
	return drawTo(p, c)
}

// drawTo draws p on c inside the Margin and returns what c writes.
func drawTo(p *plot.Plot, c vg.CanvasWriterTo) ([]byte, error) {
	dc := draw.New(c)
	if p.BackgroundColor != nil {
		dc.SetColor(p.BackgroundColor)
		dc.Fill(dc.Rectangle.Path())
	}
	p.Draw(draw.Crop(dc, Margin, -Margin, Margin, -Margin))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("rendering %q: %w", p.Title.Text, err)
	}
	return buf.Bytes(), nil
}

// labelWidths is an SVG canvas that also notes the width gonum/plot gave each string it drew, in
// drawing order: one <text> element each.
type labelWidths struct {
	*vgsvg.Canvas
	widths []vg.Length
}

// FillString draws str and notes its width in face's metrics.
func (c *labelWidths) FillString(face font.Face, pt vg.Point, str string) {
	c.widths = append(c.widths, face.Width(str))
	c.Canvas.FillString(face, pt, str)
}

// renderSVG draws p as an SVG whose labels carry their layout widths.
func renderSVG(p *plot.Plot) ([]byte, error) {
	c := &labelWidths{Canvas: vgsvg.New(Width, Height)}
	b, err := drawTo(p, c)
	if err != nil {
		return nil, err
	}
	return pinLabelWidths(b, c.widths)
}

// svgFamily is the font gonum/plot lays labels out with, as its SVG names it, and fallbackFamily
// the same name followed by Times New Roman (the same metrics) and the browser's serif.
const (
	svgFamily      = "font-family:Liberation Serif;"
	fallbackFamily = "font-family:'Liberation Serif','Times New Roman',Times,serif;"
)

// pinLabelWidths pins each <text> of an SVG to the width its label was laid out for (textLength, the
// glyphs scaled to fit), so that a browser without Liberation Serif, drawing a wider font, neither
// clips a label at the chart's edge nor runs it into the axis; and names fallbacks for the font.
// widths are the labels' widths in drawing order, one per <text>.
func pinLabelWidths(svg []byte, widths []vg.Length) ([]byte, error) {
	parts := bytes.Split(svg, []byte("<text "))
	if len(parts)-1 != len(widths) {
		return nil, fmt.Errorf("charts: the SVG has %d labels and %d were drawn", len(parts)-1, len(widths))
	}
	var out bytes.Buffer
	out.Write(parts[0])
	for i, w := range widths {
		fmt.Fprintf(&out, `<text textLength="%.2f" lengthAdjust="spacingAndGlyphs" `, w.Points())
		out.Write(parts[i+1])
	}
	return bytes.ReplaceAll(out.Bytes(), []byte(svgFamily), []byte(fallbackFamily)), nil
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

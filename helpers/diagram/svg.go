package diagram

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// The style every diagram shares: dark text on a white page, one sans-serif font, a small palette
// that stays legible in Jupyter's light theme.
const (
	font     = "DejaVu Sans, Helvetica, Arial, sans-serif"
	ink      = "#222222"
	faint    = "#dddddd"
	grid     = "#999999"
	titleSz  = 15
	labelSz  = 12
	smallSz  = 10
	tinySz   = 8
	marginPx = 14
)

// palette tells up to eight groups apart (the colours of the suite's charts).
var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22"}

// light is a paler version of each palette colour, for fills under text.
var light = []string{"#c6dbef", "#fdd0a2", "#c7e9c0", "#fcbba1", "#dadaeb", "#d9c3bc", "#f7c6e3", "#ebebb0"}

// Canvas collects SVG elements in drawing order. Coordinates are pixels, y downwards.
type Canvas struct {
	w, h float64
	b    strings.Builder
}

// NewCanvas starts a w x h pixel drawing on a white page.
func NewCanvas(w, h float64) *Canvas {
	c := &Canvas{w: w, h: h}
	c.Rect(0, 0, w, h, "#ffffff", "")
	return c
}

// Rect draws a rectangle; an empty fill or stroke leaves it out.
func (c *Canvas) Rect(x, y, w, h float64, fill, stroke string) {
	if fill == "" {
		fill = "none"
	}
	s := ""
	if stroke != "" {
		s = fmt.Sprintf(` stroke="%s" stroke-width="1"`, stroke)
	}
	fmt.Fprintf(&c.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"%s/>`+"\n", num(x), num(y), num(w), num(h), fill, s)
}

// Frame draws a rectangle's outline alone, width pixels wide: a window or tile outlined over cells.
func (c *Canvas) Frame(x, y, w, h float64, stroke string, width float64) {
	fmt.Fprintf(&c.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="%s" stroke-width="%s"/>`+"\n", num(x), num(y), num(w), num(h), stroke, num(width))
}

// Line draws a segment of the given colour and width.
func (c *Canvas) Line(x1, y1, x2, y2 float64, stroke string, width float64) {
	fmt.Fprintf(&c.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"/>`+"\n", num(x1), num(y1), num(x2), num(y2), stroke, num(width))
}

// Arrow draws a segment with a head at (x2, y2).
func (c *Canvas) Arrow(x1, y1, x2, y2 float64, stroke string) {
	c.Line(x1, y1, x2, y2, stroke, 1.5)
	dx, dy := x2-x1, y2-y1
	n := math.Hypot(dx, dy)
	if n == 0 {
		return
	}
	ux, uy := dx/n, dy/n
	const l, w = 8, 4
	c.Polygon([]float64{x2, y2, x2 - l*ux + w*uy, y2 - l*uy - w*ux, x2 - l*ux - w*uy, y2 - l*uy + w*ux}, stroke, "")
}

// Polygon draws a closed polygon through the points x0, y0, x1, y1, ...
func (c *Canvas) Polygon(pts []float64, fill, stroke string) {
	var p []string
	for i := 0; i+1 < len(pts); i += 2 {
		p = append(p, num(pts[i])+","+num(pts[i+1]))
	}
	if fill == "" {
		fill = "none"
	}
	s := ""
	if stroke != "" {
		s = fmt.Sprintf(` stroke="%s" stroke-width="1"`, stroke)
	}
	fmt.Fprintf(&c.b, `<polygon points="%s" fill="%s"%s/>`+"\n", strings.Join(p, " "), fill, s)
}

// Circle draws a disc.
func (c *Canvas) Circle(x, y, r float64, fill, stroke string) {
	s := ""
	if stroke != "" {
		s = fmt.Sprintf(` stroke="%s" stroke-width="1.5"`, stroke)
	}
	fmt.Fprintf(&c.b, `<circle cx="%s" cy="%s" r="%s" fill="%s"%s/>`+"\n", num(x), num(y), num(r), fill, s)
}

// Anchors of a text.
const (
	Start  = "start"
	Middle = "middle"
	End    = "end"
)

// Text writes s with its baseline's anchor point at (x, y), vertically centred on y.
func (c *Canvas) Text(x, y float64, s string, size float64, anchor, fill string) {
	c.text(x, y, s, size, anchor, fill, "")
}

// Bold writes s in bold.
func (c *Canvas) Bold(x, y float64, s string, size float64, anchor, fill string) {
	c.text(x, y, s, size, anchor, fill, ` font-weight="bold"`)
}

func (c *Canvas) text(x, y float64, s string, size float64, anchor, fill, extra string) {
	if fill == "" {
		fill = ink
	}
	fmt.Fprintf(&c.b, `<text x="%s" y="%s" font-size="%s" text-anchor="%s" dominant-baseline="central" fill="%s"%s>%s</text>`+"\n",
		num(x), num(y), num(size), anchor, fill, extra, html.EscapeString(s))
}

// Title writes a diagram's title at the top left.
func (c *Canvas) Title(s string) { c.Bold(marginPx, marginPx+4, s, titleSz, Start, ink) }

// Bytes is the finished SVG document.
func (c *Canvas) Bytes() []byte {
	var out strings.Builder
	fmt.Fprintf(&out, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="%s">`+"\n",
		num(c.w), num(c.h), num(c.w), num(c.h), font)
	out.WriteString(c.b.String())
	out.WriteString("</svg>\n")
	return []byte(out.String())
}

// num prints a coordinate with at most two decimals, so that the files are stable and small.
func num(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}

package hopper

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// SwizzledChunk is where the 128-byte swizzle puts 16-byte chunk c (0..7) of row r of a tile: chunk
// c XOR (r mod 8). TMA writes tiles this way and wgmma reads them this way when their tensor map and
// matrix descriptor name the 128-byte swizzle; step 1's threads apply it themselves.
func SwizzledChunk(r, c int) int { return c ^ (r % 8) }

// chunkColors are eight colours that tell the chunks apart.
var chunkColors = []color.RGBA{{0x1f, 0x77, 0xb4, 255}, {0xff, 0x7f, 0x0e, 255}, {0x2c, 0xa0, 0x2c, 255}, {0xd6, 0x27, 0x28, 255},
	{0x94, 0x67, 0xbd, 255}, {0x8c, 0x56, 0x4b, 255}, {0xe3, 0x77, 0xc2, 255}, {0xbc, 0xbd, 0x22, 255}}

// SwizzleFigure draws one 1024-byte swizzle atom: 8 rows of 128 bytes, each cell a 16-byte chunk
// (8 halves) in the place the swizzle gives it, coloured and numbered by the chunk it holds. A
// column of the logical tile (chunk c of every row) lands in 8 different columns of banks, so the
// 8 rows' chunks c are read without a bank conflict.
func SwizzleFigure() (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "The 128-byte swizzle: chunk c of row r sits at chunk c XOR r"
	p.X.Label.Text = "16-byte chunk in shared memory (banks 4c .. 4c+3)"
	p.Y.Label.Text = "row of the tile (128 bytes each)"
	var xys plotter.XYs
	var labels []string
	for r := 0; r < 8; r++ {
		for c := 0; c < 8; c++ {
			at := SwizzledChunk(r, c)
			x0, y0 := float64(at), float64(7-r)
			poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: y0}, {X: x0 + 1, Y: y0}, {X: x0 + 1, Y: y0 + 1}, {X: x0, Y: y0 + 1}})
			if err != nil {
				return nil, err
			}
			poly.Color = chunkColors[c]
			poly.LineStyle.Color = color.White
			poly.LineStyle.Width = vg.Points(1)
			p.Add(poly)
			xys = append(xys, plotter.XY{X: x0 + 0.5, Y: y0 + 0.5})
			labels = append(labels, fmt.Sprintf("c%d", c))
		}
	}
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Color = color.White
		l.TextStyle[i].XAlign, l.TextStyle[i].YAlign = -0.5, -0.5
	}
	p.Add(l)
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 8, 0, 8
	var xt, yt []plot.Tick
	for i := 0; i < 8; i++ {
		xt = append(xt, plot.Tick{Value: float64(i) + 0.5, Label: fmt.Sprint(i)})
		yt = append(yt, plot.Tick{Value: float64(7-i) + 0.5, Label: fmt.Sprint(i)})
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.ConstantTicks(xt), plot.ConstantTicks(yt)
	return p, nil
}

package oneflow

import (
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/charts"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// Figures are the lesson's charts: % of copy bandwidth per step and dtype (elementwise and
// upsample), time against size on log axes, and a roofline.
func Figures(run *record.Run) ([]lab.Figure, error) {
	var out []lab.Figure
	for _, sec := range Sections {
		f, err := SectionFigures(run, sec)
		if err != nil {
			return nil, err
		}
		out = append(out, f...)
	}
	return out, nil
}

// SectionFigures are the charts of one section (atomics has none: its table says it all).
func SectionFigures(run *record.Run, section string) ([]lab.Figure, error) {
	switch section {
	case SecElementwise:
		return elementwiseFigures(run)
	case SecUpsample:
		return upsampleFigures(run)
	}
	return nil, nil
}

func elementwiseFigures(run *record.Run) ([]lab.Figure, error) {
	labels := []string{"naive", "packed", InflightName, "packed, misaligned (pack 1)", "PyTorch torch.mul", TorchCompile}
	var series []charts.Series
	for _, d := range DTypes {
		s := charts.Series{Name: string(d)}
		for _, l := range labels {
			r, _ := find(run, "mul", l, d, 0)
			s.Values = append(s.Values, r.PctBW)
		}
		series = append(series, s)
	}
	bars, err := charts.Bars("z = x*y at 32M: % of measured copy bandwidth", "% of copy bandwidth", labels, series, false, 100)
	if err != nil {
		return nil, err
	}
	var lines []charts.Line
	for _, d := range DTypes {
		for _, v := range []string{"naive", "packed", "PyTorch torch.mul"} {
			l := charts.Line{Name: fmt.Sprintf("%s %s", v, d)}
			for _, r := range run.Select("mul sweep") {
				if r.Variant == v && r.DType == string(d) && r.MedianMS > 0 {
					l.X = append(l.X, float64(r.Size))
					l.Y = append(l.Y, r.MedianMS*1e3)
				}
			}
			if len(l.X) > 0 {
				lines = append(lines, l)
			}
		}
	}
	sweep, err := charts.Lines("z = x*y: time against size", "elements", "time (µs)", lines, true, true)
	if err != nil {
		return nil, err
	}
	var pts []charts.Point
	for _, r := range run.Select("mul") {
		if r.GFLOPs > 0 && r.Variant != "device copy" {
			pts = append(pts, charts.Point{Name: r.Variant + " " + r.DType, Intensity: 1 / (3 * float64(DType(r.DType).Size())), GFLOPs: r.GFLOPs})
		}
	}
	for _, r := range run.Select("upsample " + Backward) {
		if r.GFLOPs > 0 && r.Size == int64(LargeShape[0]*LargeShape[1]*LargeShape[2]*LargeShape[3]) {
			pts = append(pts, charts.Point{Name: "upsample bwd " + r.Variant + " " + r.DType, Intensity: 3 / (5 * float64(DType(r.DType).Size())), GFLOPs: r.GFLOPs})
		}
	}
	var figs = []lab.Figure{{Name: "02_mul_bandwidth", Plot: bars}, {Name: "02_mul_sweep", Plot: sweep}}
	if f, ok, err := bytesFigure(run); err != nil {
		return nil, err
	} else if ok {
		figs = append(figs, f)
	}
	if f, ok, err := inflightFigure(run); err != nil {
		return nil, err
	} else if ok {
		figs = append(figs, f)
	}
	if run.Receipt.CopyGBps > 0 && run.Receipt.PeakGFLOPS > 0 {
		roof, err := charts.Roofline("Bandwidth-bound kernels on the roofline", run.Receipt.CopyGBps, run.Receipt.PeakGFLOPS, pts)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: "02_roofline", Plot: roof})
	}
	return figs, nil
}

func upsampleFigures(run *record.Run) ([]lab.Figure, error) {
	var figs []lab.Figure
	for _, shape := range [][4]int{ArticleShape, LargeShape} {
		size := int64(shape[0] * shape[1] * shape[2] * shape[3])
		var labels []string
		var series []charts.Series
		for _, d := range DTypes {
			for _, dir := range []string{Forward, Backward} {
				labels = append(labels, fmt.Sprintf("%s %s", dir, d))
			}
		}
		for _, v := range []string{"generic", "pack2x", "PyTorch", TorchCompile} {
			s := charts.Series{Name: v}
			for _, d := range DTypes {
				for _, dir := range []string{Forward, Backward} {
					r, _ := find(run, "upsample "+dir, v, d, size)
					s.Values = append(s.Values, r.PctBW)
				}
			}
			series = append(series, s)
		}
		b, err := charts.Bars(fmt.Sprintf("Nearest 2x upsample %s: %% of measured copy bandwidth", fmtShape(shape)), "% of copy bandwidth", labels, series, false, 100)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: fmt.Sprintf("02_upsample_%dx%d", shape[2], shape[3]), Plot: b})
	}
	return figs, nil
}

// inflightFigure is step 3's sweep: % of copy bandwidth against bytes of loads in flight per
// thread, one line per cache hint and grid rule, with torch.mul and step 2 as flat lines.
func inflightFigure(run *record.Run) (lab.Figure, bool, error) {
	var lines []charts.Line
	idx := map[string]int{}
	for _, s := range InflightSweep() {
		r, ok := find(run, "mul inflight", s.Name, F16, 0)
		if !ok || r.MedianMS <= 0 {
			continue
		}
		_, name, _ := strings.Cut(s.Name, ", ") // the hint and the grid rule
		i, seen := idx[name]
		if !seen {
			i = len(lines)
			idx[name] = i
			lines = append(lines, charts.Line{Name: name})
		}
		lines[i].X = append(lines[i].X, float64(2*16*s.PacksPerThread))
		lines[i].Y = append(lines[i].Y, r.PctBW)
	}
	if len(lines) == 0 {
		return lab.Figure{}, false, nil
	}
	for _, ref := range []struct{ variant, name string }{{"PyTorch torch.mul", "torch.mul"}, {"packed", "step 2 (packed)"}} {
		if r, ok := find(run, "mul", ref.variant, F16, 0); ok && r.MedianMS > 0 {
			lines = append(lines, charts.Line{Name: ref.name, X: []float64{32, 128}, Y: []float64{r.PctBW, r.PctBW}})
		}
	}
	p, err := charts.Lines("Half z = x*y at 32M: bytes in flight per thread", "bytes of loads in flight per thread", "% of copy bandwidth", lines, true, false)
	if err != nil {
		return lab.Figure{}, false, err
	}
	return lab.Figure{Name: "02_mul_inflight", Plot: p}, true, nil
}

// bytesFigure is the size sweep against bytes moved: % of copy bandwidth of the packed step and
// torch.mul in both dtypes; equal bytes, equal share.
func bytesFigure(run *record.Run) (lab.Figure, bool, error) {
	var lines []charts.Line
	for _, v := range []string{"packed", "PyTorch torch.mul"} {
		for _, d := range DTypes {
			l := charts.Line{Name: fmt.Sprintf("%s %s", v, d)}
			for _, r := range run.Select("mul sweep") {
				if r.Variant == v && r.DType == string(d) && r.MedianMS > 0 {
					l.X = append(l.X, float64(3*int64(d.Size())*r.Size)/1e6)
					l.Y = append(l.Y, r.PctBW)
				}
			}
			if len(l.X) > 0 {
				lines = append(lines, l)
			}
		}
	}
	if len(lines) == 0 {
		return lab.Figure{}, false, nil
	}
	p, err := charts.Lines("z = x*y: share of the copy bandwidth against bytes moved", "MB moved (read + written)", "% of copy bandwidth", lines, true, false)
	if err != nil {
		return lab.Figure{}, false, err
	}
	return lab.Figure{Name: "02_mul_bytes", Plot: p}, true, nil
}

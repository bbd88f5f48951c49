package reduce

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/charts"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// Figures are the lesson's charts.
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

// SectionFigures are the charts of one section.
func SectionFigures(run *record.Run, section string) ([]lab.Figure, error) {
	switch section {
	case SecSoftmax:
		return softmaxFigures(run)
	case SecLayerNorm:
		return lnFigures(run)
	}
	return nil, nil
}

func barsOf(run *record.Run, caseName string, variants []string) ([]string, []charts.Series) {
	s := charts.Series{Name: "% of copy bandwidth"}
	var labels []string
	for _, v := range variants {
		r, ok := find(run, caseName, v, 0)
		if !ok {
			continue
		}
		labels = append(labels, v)
		s.Values = append(s.Values, pct(r, ok))
	}
	return labels, []charts.Series{s}
}

func sweepLines(run *record.Run, caseName string, variants []string) []charts.Line {
	var lines []charts.Line
	for _, v := range variants {
		l := charts.Line{Name: v}
		for _, r := range run.Select(caseName) {
			if r.Variant == v && r.MedianMS > 0 {
				l.X = append(l.X, float64(r.Size))
				l.Y = append(l.Y, r.PctBW)
			}
		}
		if len(l.X) > 0 {
			lines = append(lines, l)
		}
	}
	return lines
}

func softmaxFigures(run *record.Run) ([]lab.Figure, error) {
	var vs []string
	for _, s := range SoftmaxSteps[:5] {
		vs = append(vs, s.Name)
	}
	labels, series := barsOf(run, CaseSoftmax, append(vs, Eager, Compiled))
	bars, err := charts.Bars("Softmax (4096, 65536) float32: % of measured copy bandwidth", "% of copy bandwidth (x once + y once)", labels, series, false, 100)
	if err != nil {
		return nil, err
	}
	var sv []string
	for _, n := range []int{2, 3, 4, 5, 6} {
		sv = append(sv, stepByNumber(n).Name)
	}
	sweep, err := charts.Lines(fmt.Sprintf("Softmax row length sweep at %dM elements", SoftmaxTotal>>20), "row length (columns)", "% of copy bandwidth",
		sweepLines(run, CaseSoftmaxSweep, append(sv, Eager, Compiled)), true, false)
	if err != nil {
		return nil, err
	}
	return []lab.Figure{{Name: "04_softmax_bandwidth", Plot: bars}, {Name: "04_softmax_sweep", Plot: sweep}}, nil
}

func lnFigures(run *record.Run) ([]lab.Figure, error) {
	var vs []string
	for _, s := range LNSteps {
		vs = append(vs, s.Name)
	}
	labels, _ := barsOf(run, CaseLN, append(vs, Eager, Compiled))
	t := charts.Series{Name: "time (ms)"}
	for _, l := range labels {
		r, _ := find(run, CaseLN, l, 0)
		t.Values = append(t.Values, r.MedianMS)
	}
	bars, err := charts.Bars("Layer norm (16, 64, 256, 256): time per step (log scale)", "ms", labels, []charts.Series{t}, true, 0)
	if err != nil {
		return nil, err
	}
	var sv []string
	for _, s := range LNSteps[1:] {
		sv = append(sv, s.Name)
	}
	sweep, err := charts.Lines(fmt.Sprintf("Layer norm sweep at %dM elements", LNSweepTotal>>20), "normalised size M", "% of copy bandwidth",
		sweepLines(run, CaseLNSweep, append(sv, Eager, Compiled)), true, false)
	if err != nil {
		return nil, err
	}
	return []lab.Figure{{Name: "04_layernorm_time", Plot: bars}, {Name: "04_layernorm_sweep", Plot: sweep}}, nil
}

package lab

import (
	"gonum.org/v1/plot"

	"github.com/cudalessons/cudalessons/helpers/charts"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// PeakBars is a bar chart of each record's share of the peak of its dtype on the receipt's GPU
// (record.Receipt.FLOPShare): one bar per record, labelled by label, coloured by the peak it is a
// share of ("% of FP32 peak", "% of TF32 tensor peak (datasheet)", a split's with its 33% ceiling),
// with the 100% line. A record whose peak this GPU has no figure for keeps its label and has no bar.
func PeakBars(title string, receipt record.Receipt, recs []record.Record, label func(record.Record) string) (*plot.Plot, error) {
	var labels []string
	var series []charts.Series
	idx := map[string]int{}
	for j, r := range recs {
		labels = append(labels, label(r))
		pct, peak, ok := receipt.FLOPShare(r)
		if !ok && peak.Missing == "" {
			continue // no counted FLOPs
		}
		name := "% of " + peak.Label()
		if !ok {
			name = "no figure: " + peak.Missing
		}
		i, seen := idx[name]
		if !seen {
			i = len(series)
			idx[name] = i
			series = append(series, charts.Series{Name: name})
		}
		for len(series[i].Values) < j {
			series[i].Values = append(series[i].Values, 0)
		}
		series[i].Values = append(series[i].Values, pct)
	}
	for i := range series {
		for len(series[i].Values) < len(labels) {
			series[i].Values = append(series[i].Values, 0)
		}
	}
	yLabel := "% of FP32 peak"
	if len(series) != 1 || series[0].Name != "% of FP32 peak" {
		yLabel = "% of the step's peak"
	}
	return charts.Bars(title, yLabel, labels, series, false, 100)
}

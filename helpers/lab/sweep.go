package lab

import (
	"sort"

	"github.com/cudalessons/cudalessons/helpers/charts"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// SweepLines turns the records of a size sweep into one chart line per variant, in the order the
// variants first appear: x is the record's Size, y what y picks (a time, a rate, a share). Records
// not measured (no median) are left out, and each line's points are ordered by size, so a size
// recorded out of order (the article's, measured first) does not fold the line back.
func SweepLines(recs []record.Record, y func(record.Record) float64) []charts.Line {
	var lines []charts.Line
	idx := map[string]int{}
	for _, r := range recs {
		if r.MedianMS <= 0 {
			continue
		}
		i, ok := idx[r.Variant]
		if !ok {
			i = len(lines)
			idx[r.Variant] = i
			lines = append(lines, charts.Line{Name: r.Variant})
		}
		lines[i].X = append(lines[i].X, float64(r.Size))
		lines[i].Y = append(lines[i].Y, y(r))
	}
	for i := range lines {
		sort.Sort(byX{&lines[i]})
	}
	return lines
}

// byX sorts a line's points by x, keeping each y with its x.
type byX struct{ l *charts.Line }

func (b byX) Len() int           { return len(b.l.X) }
func (b byX) Less(i, j int) bool { return b.l.X[i] < b.l.X[j] }
func (b byX) Swap(i, j int) {
	b.l.X[i], b.l.X[j] = b.l.X[j], b.l.X[i]
	b.l.Y[i], b.l.Y[j] = b.l.Y[j], b.l.Y[i]
}

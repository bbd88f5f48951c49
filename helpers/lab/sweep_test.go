package lab

import (
	"slices"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/record"
)

// One line per variant in order of first appearance, unmeasured records left out, and each line's
// points ordered by size with their y values (the article's size recorded first must not fold a line).
func TestSweepLines(t *testing.T) {
	recs := []record.Record{
		{Variant: "b", Size: 64, MedianMS: 4},
		{Variant: "a", Size: 32, MedianMS: 2},
		{Variant: "b", Size: 16, MedianMS: 1},
		{Variant: "a", Size: 8, MedianMS: 0}, // not measured
		{Variant: "b", Size: 32, MedianMS: 2},
	}
	lines := SweepLines(recs, func(r record.Record) float64 { return 10 * r.MedianMS })
	if len(lines) != 2 || lines[0].Name != "b" || lines[1].Name != "a" {
		t.Fatalf("lines %+v", lines)
	}
	if !slices.Equal(lines[0].X, []float64{16, 32, 64}) || !slices.Equal(lines[0].Y, []float64{10, 20, 40}) {
		t.Errorf("line b: %v %v", lines[0].X, lines[0].Y)
	}
	if !slices.Equal(lines[1].X, []float64{32}) || !slices.Equal(lines[1].Y, []float64{20}) {
		t.Errorf("line a: %v %v", lines[1].X, lines[1].Y)
	}
}

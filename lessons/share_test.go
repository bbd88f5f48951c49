package lessons

import (
	"slices"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
	"github.com/cudalessons/cudalessons/results"
)

// Every share column of the recorded runs is a share of the step's own ceiling: no "0.0%" (a
// kernel bound by launches, such as GIoU's, shows "—" and a note, not "0.0% of copy BW"), and no
// TF32, FP16 or BF16 step against the FP32 peak. Checked on each lesson's tables, on the tables
// Walk and Try show (show.Records, lab.TryTable) for every record, and on each record's cell.
func TestSharesAreOfTheStepsOwnCeiling(t *testing.T) {
	launchBound := 0
	for _, l := range All() {
		run, err := record.LoadFS(results.FS, l.ID)
		if err != nil {
			t.Fatalf("%s: %v", l.ID, err)
		}
		tabs := l.Tables(run)
		cases := map[string]bool{}
		for _, r := range run.Records {
			cases[r.Case] = true
			tensor := run.Receipt.PeakFor(r.DType).Tensor()
			cell := show.ShareCell(run.Receipt, r)
			if tensor && strings.Contains(cell, "FP32 peak") {
				t.Errorf("%s %s %s (%s): %q", l.ID, r.Case, r.Variant, r.DType, cell)
			}
			if cell == "—" {
				launchBound++
			}
			if r.Kind == "kernel" {
				tab, _ := lab.TryTable(r.Variant, []record.Record{r}, []record.Record{r}, run.Receipt)
				tabs = append(tabs, tab)
			}
		}
		for c := range cases {
			tabs = append(tabs, show.Records(c, run.Select(c), run.Receipt))
		}
		for _, tab := range tabs {
			dtype := slices.Index(tab.Header, "dtype")
			for _, row := range tab.Rows {
				for i, c := range row {
					h := ""
					if i < len(tab.Header) {
						h = tab.Header[i]
					}
					if strings.HasPrefix(c, "0.0%") {
						t.Errorf("%s, %q, column %q: a share of %q (row %q)", l.ID, tab.Title, h, c, row)
					}
					if dtype >= 0 && run.Receipt.PeakFor(row[dtype]).Tensor() && (strings.Contains(c, "FP32 peak") || strings.Contains(h, "FP32 peak")) {
						t.Errorf("%s, %q: a %s row against the FP32 peak: %q", l.ID, tab.Title, row[dtype], row)
					}
				}
			}
			for _, h := range []string{"share of its ceiling", "yours: share of the GPU"} {
				col := slices.Index(tab.Header, h)
				for _, row := range tab.Rows {
					if col >= 0 && row[col] == "—" && !strings.Contains(tab.Caption, "bound by launches") {
						t.Errorf("%s, %q: a \"—\" share without the caption's note:\n%s", l.ID, tab.Title, tab.Text())
					}
				}
			}
		}
	}
	if launchBound == 0 {
		t.Error("no recorded kernel is under 1% of every ceiling: GIoU's short kernels were expected to be")
	}
}

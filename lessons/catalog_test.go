package lessons

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/results"
)

// A quick run measures every headline point of a full run (the lesson's Compare cases and main
// tables) at the same shape, trading only repetitions and sweep points; and the full plan is what
// the recorded run measured: every recorded record at a planned point, every planned point recorded.
// Notebook 00's vector add at 16M floats in quick mode, beside the recorded 64M, fails here.
func TestQuickRunsMeasureTheRecordedHeadlines(t *testing.T) {
	for _, l := range All() {
		if l.Plan == nil {
			t.Errorf("%s: no Plan", l.ID)
			continue
		}
		rec, err := record.LoadFS(results.FS, l.ID)
		if err != nil {
			t.Errorf("%s: %v", l.ID, err)
			continue
		}
		d := rec.Receipt.Device
		full, quick := l.Plan(false, d), l.Plan(true, d)
		fh, qh := lab.HeadlinePoints(full), lab.HeadlinePoints(quick)
		for p := range fh {
			if !qh[p] {
				t.Errorf("%s: quick does not measure the headline %s @ %s", l.ID, p.Case, p.Shape)
			}
		}
		for p := range qh {
			if !fh[p] {
				t.Errorf("%s: quick measures the headline %s @ %s, which a full run does not", l.ID, p.Case, p.Shape)
			}
		}
		all := map[lab.Point]bool{}
		for _, p := range full {
			all[p] = true
		}
		for _, p := range quick {
			if p.Sweep && !all[p] {
				t.Errorf("%s: quick sweeps %s @ %s, which a full run does not", l.ID, p.Case, p.Shape)
			}
		}
		cases := map[string]bool{}
		for p := range fh {
			cases[p.Case] = true
		}
		for _, c := range l.Compare {
			if !cases[c] {
				t.Errorf("%s: the compared case %q has no headline point", l.ID, c)
			}
		}
		if out := lab.OutsidePlan(rec, full); len(out) > 0 {
			t.Errorf("%s: recorded records outside the full plan: %s", l.ID, strings.Join(out, "; "))
		}
		miss := lab.MissingFromRun(rec, full)
		if len(miss) > 0 && l.NotebookQuick { // recorded from the notebook: the quick plan, all of it
			miss = lab.MissingFromRun(rec, quick)
		}
		if len(miss) > 0 {
			t.Errorf("%s: planned points the recorded run lacks: %s", l.ID, strings.Join(miss, "; "))
		}
	}
}

// No table of any lesson's recorded run shows a share of a peak over 100%: tensor-core steps are
// shares of their format's tensor-core peak (RWKV's v8 was "229.1%" of the FP32 peak, cuBLAS TF32
// in notebook 03 "550.1%").
func TestNoPeakShareOver100(t *testing.T) {
	num := regexp.MustCompile(`^([0-9.]+)%`)
	for _, l := range All() {
		run, err := record.LoadFS(results.FS, l.ID)
		if err != nil {
			continue
		}
		for _, tb := range l.Tables(run) {
			for i, h := range tb.Header {
				if !strings.Contains(h, "peak") || strings.Contains(h, "BW") {
					continue
				}
				for _, row := range tb.Rows {
					if i >= len(row) {
						continue
					}
					if m := num.FindStringSubmatch(row[i]); m != nil {
						if v, _ := strconv.ParseFloat(m[1], 64); v > 100 {
							t.Errorf("%s, %q: %s: %s %s", l.ID, tb.Title, h, row[0], row[i])
						}
					}
				}
			}
		}
	}
}

// The recorded tensor-core records, against the H100's datasheet peaks, are all under 100%.
func TestRecordedTensorSharesUnder100(t *testing.T) {
	var over []string
	for _, l := range All() {
		run, err := record.LoadFS(results.FS, l.ID)
		if err != nil {
			continue
		}
		for _, r := range run.Records {
			if pct, peak, ok := run.Receipt.FLOPShare(r); ok && peak.Tensor() && pct > 100 {
				over = append(over, l.ID+" "+r.Case+" "+r.Variant)
			}
		}
	}
	sort.Strings(over)
	if len(over) > 0 {
		t.Errorf("over 100%% of their tensor peak: %v", over)
	}
}

// A lesson says NotebookQuick exactly when one of its notebooks measures a section quick (a cell
// passing quick = true), so the recorded run's plan check above takes the plan the page measured.
func TestNotebookQuickMatchesTheNotebooks(t *testing.T) {
	quickCall := regexp.MustCompile(`\(env[^()]*, true\)`)
	for _, l := range All() {
		names := l.Notebooks
		if len(names) == 0 {
			names = []string{l.ID + ".ipynb"}
		}
		quick := false
		for _, name := range names {
			b, err := os.ReadFile(filepath.Join("..", "notebooks", name))
			if err != nil {
				t.Fatalf("%s: %v", l.ID, err)
			}
			quick = quick || quickCall.Match(b)
		}
		if quick != l.NotebookQuick {
			t.Errorf("%s: a notebook cell measures quick: %v; the lesson's NotebookQuick: %v", l.ID, quick, l.NotebookQuick)
		}
	}
}

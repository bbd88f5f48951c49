package show

import (
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// Table is a titled table with a caption (the receipt, or the article's source).
type Table struct {
	Title   string
	Header  []string
	Rows    [][]string
	Caption string
}

// HTML renders the table.
func (t Table) HTML() string {
	var b strings.Builder
	b.WriteString(`<table style="border-collapse:collapse;font-size:13px;margin:6px 0">`)
	if t.Title != "" {
		fmt.Fprintf(&b, `<caption style="caption-side:top;text-align:left;font-weight:bold;padding:4px 0">%s</caption>`, html.EscapeString(t.Title))
	}
	b.WriteString("<tr>")
	for _, h := range t.Header {
		fmt.Fprintf(&b, `<th style="border-bottom:2px solid #888;padding:3px 8px;text-align:left">%s</th>`, html.EscapeString(h))
	}
	b.WriteString("</tr>")
	for _, r := range t.Rows {
		b.WriteString("<tr>")
		for _, c := range r {
			fmt.Fprintf(&b, `<td style="border-bottom:1px solid #ddd;padding:3px 8px">%s</td>`, html.EscapeString(c))
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</table>")
	if t.Caption != "" {
		fmt.Fprintf(&b, `<div style="font-size:11px;color:#666;max-width:900px">%s</div>`, html.EscapeString(t.Caption))
	}
	return b.String()
}

// Text renders the table with aligned columns.
func (t Table) Text() string {
	widths := make([]int, len(t.Header))
	for i, h := range t.Header {
		widths[i] = len([]rune(h))
	}
	for _, r := range t.Rows {
		for i, c := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], len([]rune(c)))
			}
		}
	}
	var b strings.Builder
	if t.Title != "" {
		b.WriteString(t.Title + "\n")
	}
	line := func(cells []string) {
		for i, c := range cells {
			if i < len(widths) {
				fmt.Fprintf(&b, "%-*s  ", widths[i], c)
			}
		}
		b.WriteString("\n")
	}
	line(t.Header)
	for i, w := range widths {
		b.WriteString(strings.Repeat("-", w))
		if i < len(widths)-1 {
			b.WriteString("  ")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		line(r)
	}
	if t.Caption != "" {
		b.WriteString(t.Caption + "\n")
	}
	return b.String()
}

// Markdown renders the table for a report.
func (t Table) Markdown() string {
	var b strings.Builder
	if t.Title != "" {
		fmt.Fprintf(&b, "**%s**\n\n", t.Title)
	}
	b.WriteString("| " + strings.Join(t.Header, " | ") + " |\n|")
	for range t.Header {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	if t.Caption != "" {
		fmt.Fprintf(&b, "\n%s\n", t.Caption)
	}
	return b.String()
}

// Display shows the table (HTML in a notebook, text outside).
func (t Table) Display() { HTML(t.HTML(), t.Text()) }

// Num formats a number with three significant digits, "n/a" for NaN or zero.
func Num(v float64) string {
	if math.IsNaN(v) || v == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.3g", v)
}

// Pct formats a percentage.
func Pct(v float64) string {
	if math.IsNaN(v) || v == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", v)
}

// Times formats a speedup.
func Times(v float64) string {
	if math.IsNaN(v) || v == 0 || math.IsInf(v, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", v)
}

// MS formats a time in milliseconds (bench.FormatMS), "—" for a time not measured (zero or NaN).
func MS(v float64) string {
	if v <= 0 || math.IsNaN(v) {
		return "—"
	}
	return bench.FormatMS(v)
}

// Ratio formats a/b as a speedup, "—" when either was not measured (zero or NaN).
func Ratio(a, b float64) string {
	if a <= 0 || b <= 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "—"
	}
	return Times(a / b)
}

// Records is the table of a case's records: time with spread, throughput and its share of the
// record's own ceiling (ShareCell: the copy bandwidth, the FP32 peak, or the tensor-core peak of
// its format), the speedup over each named baseline (ratios of medians from the same run), and
// correctness.
func Records(title string, recs []record.Record, receipt record.Receipt, baselines ...string) Table {
	t := Table{Title: title, Header: []string{"variant", "dtype", "shape", "median", "min .. max", "GB/s", "GFLOP/s", "share of its ceiling"}}
	medians := map[string]float64{}
	for _, r := range recs {
		medians[r.Variant] = r.MedianMS
	}
	for _, b := range baselines {
		t.Header = append(t.Header, "vs "+b)
	}
	t.Header = append(t.Header, "check")
	for _, r := range recs {
		row := []string{r.Variant, r.DType, r.Shape, bench.FormatMS(r.MedianMS),
			bench.FormatMS(r.MinMS) + " .. " + bench.FormatMS(r.MaxMS), Num(r.GBps), Num(r.GFLOPs), ShareCell(receipt, r)}
		for _, b := range baselines {
			row = append(row, Times(medians[b]/r.MedianMS))
		}
		row = append(row, verdict(r))
		t.Rows = append(t.Rows, row)
	}
	t.Caption = Sentences(PeakNote(receipt, recs), ShareNote(receipt, recs), "Measured: "+receipt.String())
	return t
}

func verdict(r record.Record) string {
	switch {
	case r.Kind == "baseline" && r.Tol == "":
		return "baseline"
	case r.Correct:
		return fmt.Sprintf("pass (rel L2 %.1e)", r.RelL2)
	}
	return fmt.Sprintf("FAIL (rel L2 %.1e)", r.RelL2)
}

// Reports is the compile-report table of several kernels.
func Reports(title string, reps []record.KernelReport) Table {
	t := Table{Title: title, Header: []string{"kernel", "registers", "static smem", "dynamic smem", "local (spills)", "block", "blocks/SM", "occupancy", "limited by"}}
	for _, r := range reps {
		if !r.Measured {
			t.Rows = append(t.Rows, []string{r.Kernel, "needs GPU", fmt.Sprintf("%d B", r.StaticSharedBytes), fmt.Sprintf("%d B", r.DynamicShared), "needs GPU", fmt.Sprint(r.Block), "-", "-", "-"})
			continue
		}
		t.Rows = append(t.Rows, []string{r.Kernel, fmt.Sprint(r.Registers), fmt.Sprintf("%d B", r.StaticSharedBytes), fmt.Sprintf("%d B", r.DynamicShared),
			fmt.Sprintf("%d B", r.LocalBytes), fmt.Sprint(r.Block), fmt.Sprint(r.BlocksPerSM), Pct(100 * r.Occupancy), r.Limiter})
	}
	t.Caption = "Registers, spills and occupancy come from the driver after it JIT-compiles the PTX for the GPU; in the no-GPU mode only the static shared memory (read from the PTX) is known."
	return t
}

// Targets is a lesson's closing table: each target, the figure the run measured, and whether it
// was met: "yes", "no", or "not measured" when the run lacks the figures to judge it.
type Targets struct{ Table }

// NewTargets returns an empty targets table titled title.
func NewTargets(title string) *Targets {
	return &Targets{Table{Title: title, Header: []string{"target", "measured", "met"}}}
}

// Add adds one target with its measured figure; known says the run had the figures to judge it.
func (t *Targets) Add(target, measured string, met, known bool) {
	v := "no"
	switch {
	case !known:
		v = "not measured"
	case met:
		v = "yes"
	}
	t.Rows = append(t.Rows, []string{target, measured, v})
}

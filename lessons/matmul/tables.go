package matmul

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/charts"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

func tflops(r record.Record) string {
	if r.GFLOPs <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f", r.GFLOPs/1e3)
}

// Verdict is a record's check column: "baseline" for a baseline with no error measured, else pass
// or FAIL at its tolerance, with its relative L2 error.
func Verdict(r record.Record) string {
	switch {
	case r.Kind == "baseline" && r.RelL2 == 0:
		return "baseline"
	case r.Correct:
		return fmt.Sprintf("pass, %s (rel L2 %.1e)", r.Tol, r.RelL2)
	}
	return fmt.Sprintf("FAIL at %s (rel L2 %.1e)", r.Tol, r.RelL2)
}

// LadderTable is every step and baseline at 4096^3: time, throughput, speedups over cuBLAS fp32
// and over the naive step from the same run, and the check.
func LadderTable(run *record.Run) show.Table {
	recs := run.Select("matmul")
	peakHeader, peakCell := show.PeakColumn(run.Receipt, recs)
	t := show.Table{Title: "C = A·B at 4096 x 4096 x 4096 (137 GFLOP): every step and cuBLAS, one run",
		Header: []string{"step", "products", "median", "min .. max", "TFLOP/s", peakHeader, "vs cuBLAS fp32", "vs naive", "check against float64"}}
	base, naive := run.Median("matmul", TorchFP32), run.Median("matmul", Steps[0].Name)
	for _, r := range recs {
		if Unavailable(r) {
			t.Rows = append(t.Rows, []string{r.Variant, r.DType, "unavailable", "", "", "", "", "", r.Note})
			continue
		}
		t.Rows = append(t.Rows, []string{r.Variant, r.DType, show.MS(r.MedianMS), show.MS(r.MinMS) + " .. " + show.MS(r.MaxMS), tflops(r), peakCell(r),
			show.Ratio(base, r.MedianMS), show.Ratio(naive, r.MedianMS), Verdict(r)})
	}
	t.Caption = show.Sentences("Medians of the suite's method (CUDA events, warm-up, L2 flushed before each run); speedups are ratios of medians of this run. "+
		"TFLOP/s counts the 2 x 4096^3 useful FLOPs whatever the products.", show.PeakNote(run.Receipt, recs), "Kernels are checked on a NaN-poisoned output, "+
		"at 4 full rows, 4 full columns and 512 random elements, against the float64 reference; cuBLAS's rows show its own error on the same inputs and elements. Measured: "+run.Receipt.String())
	return t
}

// VariantTable is the variants beside the steps they vary.
func VariantTable(run *record.Run) show.Table {
	t := show.Table{Title: "Variants at 4096^3: what each choice of the ladder is worth",
		Header: []string{"variant", "products", "median", "TFLOP/s", "vs cuBLAS fp32", "check against float64", "instead of"}}
	base := run.Median("matmul", TorchFP32)
	against := map[string]string{"6 vectorized, no padding": "6 vectorized", "8b 3xTF32, one accumulator": "8b 3xTF32 split",
		"9 fp16x3, one accumulator": "9 fp16x3 split", "9 bf16x3 split": "9 fp16x3 split", HiOnly.Name: "9 fp16x3 split"}
	for _, r := range run.Select("variant") {
		ref := against[r.Variant]
		t.Rows = append(t.Rows, []string{r.Variant, r.DType, show.MS(r.MedianMS), tflops(r), show.Ratio(base, r.MedianMS), Verdict(r),
			fmt.Sprintf("%s: %s", ref, show.MS(run.Median("matmul", ref)))})
	}
	t.Caption = "Same problem, inputs and method as the ladder. The hi-only kernel is checked at the float32 tolerance, because a float32 product is what it claims to replace."
	return t
}

// AccuracyTable compares the float32-accurate steps' error with cuBLAS's own, and with the model.
func AccuracyTable(run *record.Run) show.Table {
	t := show.Table{Title: "Accuracy at 4096^3: relative L2 error against float64, beside cuBLAS fp32's own",
		Header: []string{"kernel", "products", "rel L2", "x cuBLAS fp32's", "rounding model", "median", "vs cuBLAS fp32"}}
	base := run.Median("matmul", TorchFP32)
	cub, haveCub := crossOf(run, TorchFP32)
	recs := append(run.Select("matmul"), run.Select("variant")...)
	for _, r := range recs {
		if r.RelL2 <= 0 || Unavailable(r) {
			continue
		}
		x := "—"
		if haveCub && cub.RelL2 > 0 {
			x = fmt.Sprintf("%.2fx", r.RelL2/cub.RelL2)
		}
		_, model := ErrorModel(r.DType, Article.K)
		t.Rows = append(t.Rows, []string{r.Variant, r.DType, fmt.Sprintf("%.2e", r.RelL2), x, fmt.Sprintf("%.1e", model), show.MS(r.MedianMS), show.Ratio(base, r.MedianMS)})
	}
	t.Caption = "Same inputs (uniform in [-1, 1)) and the same sampled elements for every row. The rounding model (ErrorModel) is the expected error of a sequential float32 sum " +
		"with the step's input rounding; blocked sums (every tiled step, and cuBLAS) come in under it. The target: a float32-accurate tensor-core step within 4x cuBLAS fp32's error."
	return t
}

// ArticleRow is one line of the article's results: the problem, the generated kernel's speed as a
// percentage of PyTorch's on an L40S (PyTorch time / kernel time), and its idea.
type ArticleRow struct {
	Problem string
	Pct     float64
	Idea    string
}

// ArticleRows are the article's matmul results (KernelBench level 1, L40S, fp32 inputs).
var ArticleRows = []ArticleRow{
	{"Matmul 4096 x 4096 (fp32)", 101.3, "WMMA fp16 tensor cores, hi + lo split of each fp32 value, 128x128 tile, 8 warps"},
	{"FP16 matmul", 52, "(the same model's fp16 kernel against torch.matmul on halves)"},
}

// ArticleTable is the article's matmul numbers beside this run's best split step.
func ArticleTable(run *record.Run) show.Table {
	t := show.Table{Title: "The article's matmul result (L40S) beside this run (" + run.Receipt.Device.Name + ")",
		Header: []string{"problem", "article: % of PyTorch", "article's kernel", "here: % of cuBLAS", "here: kernel"}}
	base, base16 := run.Median("matmul", TorchFP32), run.Median("matmul", TorchFP16)
	split := run.Median("matmul", "9 fp16x3 split")
	refused := refusedIn(run)
	pct := func(a, b float64) string {
		if a <= 0 || b <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.1f%%", 100*a/b)
	}
	if _, no := refused["9 fp16x3 split"]; no && split <= 0 {
		pct = func(a, b float64) string {
			if a <= 0 || b <= 0 {
				return "refused on this GPU"
			}
			return fmt.Sprintf("%.1f%%", 100*a/b)
		}
	}
	t.Rows = append(t.Rows, []string{ArticleRows[0].Problem, fmt.Sprintf("%.1f%%", ArticleRows[0].Pct), ArticleRows[0].Idea, pct(base, split), "9 fp16x3 split (mma.sync m16n8k16, split pass included)"})
	t.Rows = append(t.Rows, []string{ArticleRows[1].Problem, fmt.Sprintf("%.0f%%", ArticleRows[1].Pct), ArticleRows[1].Idea, pct(base16, run.Median("variant", HiOnly.Name)), "the hi-only split (split pass included) against cuBLAS fp16"})
	t.Caption = "Article: KernelBench level 1 on an L40S, % = PyTorch time / kernel time, correctness by allclose at atol = rtol = 1e-2, so fp16 inputs were allowed. " +
		"Its baseline, torch.matmul in fp32, runs on the CUDA cores (TF32 off): the split wins by moving the work to tensor cores, not by beating cuBLAS at the same arithmetic."
	return t
}

// KernelBenchTable is every kernel under both checks.
func KernelBenchTable(run *record.Run) show.Table {
	t := show.Table{Title: fmt.Sprintf("KernelBench's check beside ours: random trials at %v, every output, inputs at two scales", KBShape),
		Header: []string{"kernel", "products", "allclose 1e-2, inputs in [-1, 1)", "allclose 1e-2, inputs in [-0.01, 0.01)", "float64 check (worst rel L2)", "verdict"}}
	for _, r := range run.Select("kernelbench") {
		var kb1, n1, kb2, n2, ours, n3 int
		var tol string
		fmt.Sscanf(strings.ReplaceAll(r.Note, ":", " :"), strings.ReplaceAll(kbNote, ":", " :"), &kb1, &n1, &kb2, &n2, &tol, &ours, &n3)
		v := "both agree"
		switch {
		case !r.Correct && (kb1 == n1 || kb2 == n2) && n1 > 0:
			v = "WRONG KERNEL LET THROUGH by allclose 1e-2"
		case r.Correct && kb1 < n1:
			v = "correct for its precision, rejected by allclose at scale 1"
		}
		t.Rows = append(t.Rows, []string{r.Variant, r.DType, fmt.Sprintf("%d / %d pass", kb1, n1), fmt.Sprintf("%d / %d pass", kb2, n2),
			fmt.Sprintf("%s at %s: %d / %d (%.1e)", map[bool]string{true: "pass", false: "FAIL"}[r.Correct], r.Tol, ours, n3, r.RelL2), v})
	}
	t.Caption = "allclose(atol=rtol=1e-2) is torch.allclose's rule, here against the float64 reference (PyTorch's fp32 output differs from it by about 1e-6). " +
		"Its absolute term decides for outputs near zero: with inputs in [-1, 1) an output of 1024 terms has a standard deviation near 10, and half-precision inputs " +
		"(TF32, fp16: 4e-3 absolute error) fail on the few outputs that cancel to near zero. With inputs 100 times smaller every output is under 1e-2, " +
		"and a kernel that writes zeros passes. The lesson's check is relative (rel L2, and an absolute term scaled with the data) and rejects both wrong kernels at every scale. " +
		"The hi-only split and the zeros kernel are judged at the float32 tolerance: a float32 product is what they claim to be."
	return t
}

// FastPTable is fast_p over the ladder at 4096^3, against cuBLAS fp32.
func FastPTable(run *record.Run) show.Table {
	t := show.Table{Title: "fast_p over this lesson's steps (against cuBLAS fp32 at 4096^3)", Header: []string{"p", "fast_p", "steps correct and more than p x faster than cuBLAS fp32"}}
	fp := FastP(run, FastPs)
	base := run.Median("matmul", TorchFP32)
	for i, p := range FastPs {
		var names []string
		for _, r := range run.Select("matmul") {
			if r.Kind == "kernel" && r.Correct && r.MedianMS > 0 && base > 0 && base/r.MedianMS > p {
				names = append(names, r.Variant)
			}
		}
		t.Rows = append(t.Rows, []string{strconv.FormatFloat(p, 'g', -1, 64), fmt.Sprintf("%.2f", fp[i]), fmt.Sprint(names)})
	}
	t.Caption = "KernelBench's fast_p: the fraction of problems whose kernel is correct and more than p times faster than PyTorch. Here the 'problems' are the lesson's steps, correctness is the float64 check, and the baseline is torch.matmul in fp32 with TF32 off."
	return t
}

// SweepTable is TFLOP/s against size for the sweep's steps and cuBLAS.
func SweepTable(run *record.Run) show.Table {
	variants := run.Variants("sweep")
	t := show.Table{Title: "TFLOP/s against size (square, n x n x n)", Header: append([]string{"n"}, variants...)}
	for _, n := range SweepSizes(false) {
		row := []string{strconv.Itoa(n)}
		found := false
		for _, v := range variants {
			if r, ok := run.Find("sweep", v, int64(n)); ok && r.MedianMS > 0 {
				row = append(row, tflops(r))
				found = true
			} else {
				row = append(row, "—")
			}
		}
		if found {
			t.Rows = append(t.Rows, row)
		}
	}
	t.Caption = "Each kernel point checked against float64 (every output at n <= 512; one row, one column and 256 random elements above) before it was timed."
	return t
}

// NonSquareTable is the awkward shapes: the step Multiply picks on each (float32 accuracy asked
// for), and cuBLAS in the same run, with the step's speed as a share of cuBLAS fp32's.
func NonSquareTable(run *record.Run) show.Table {
	t := show.Table{Title: "Awkward shapes (no dimension a multiple of any tile): Multiply's pick beside cuBLAS",
		Header: []string{"shape", "kernel", "median", "TFLOP/s", "vs cuBLAS fp32", "check", "note"}}
	for _, r := range run.Select("nonsquare") {
		vs := "—"
		if r.Kind == "kernel" {
			vs = pctOf(awkwardMedian(run, TorchFP32, r.Shape), r.MedianMS)
		}
		t.Rows = append(t.Rows, []string{r.Shape, r.Variant, show.MS(r.MedianMS), tflops(r), vs, Verdict(r), r.Note})
	}
	return t
}

// awkwardMedian is the median time of a variant at one of the awkward shapes, or 0.
func awkwardMedian(run *record.Run, variant, shape string) float64 {
	for _, r := range run.Select("nonsquare") {
		if r.Variant == variant && r.Shape == shape {
			return r.MedianMS
		}
	}
	return 0
}

// awkwardShare is the slowest share of cuBLAS fp32's speed that Multiply's pick reached over the
// awkward shapes, with its shape; ok is false when a shape lacks either time.
func awkwardShare(run *record.Run) (worst float64, at string, ok bool) {
	worst, ok = math.Inf(1), true
	for _, s := range Awkward {
		var mine float64
		for _, r := range run.Select("nonsquare") {
			if r.Kind == "kernel" && r.Shape == s.String() && r.Correct {
				mine = r.MedianMS
			}
		}
		cub := awkwardMedian(run, TorchFP32, s.String())
		if mine <= 0 || cub <= 0 {
			return 0, s.String(), false
		}
		if share := cub / mine; share < worst {
			worst, at = share, s.String()
		}
	}
	return worst, at, true
}

// Targets is the closing table: each target of the lesson, the figure measured, met or not.
func Targets(run *record.Run) show.Table {
	t := show.NewTargets("Targets (4096^3)")
	add := t.Add
	f32, t32 := run.Median("matmul", TorchFP32), run.Median("matmul", TorchTF32)
	var bestCore, bestTF32, bestAcc record.Record
	cub, haveCub := crossOf(run, TorchFP32)
	for _, r := range run.Select("matmul") {
		if r.Kind != "kernel" || !r.Correct || r.MedianMS <= 0 {
			continue
		}
		switch r.DType {
		case "float32":
			if bestCore.MedianMS == 0 || r.MedianMS < bestCore.MedianMS {
				bestCore = r
			}
		case "tf32":
			if bestTF32.MedianMS == 0 || r.MedianMS < bestTF32.MedianMS {
				bestTF32 = r
			}
		case "3xtf32", "fp16x3", "bf16x3":
			okErr := haveCub && r.RelL2 <= 4*cub.RelL2
			bestOK := haveCub && bestAcc.MedianMS > 0 && bestAcc.RelL2 <= 4*cub.RelL2
			if bestAcc.MedianMS == 0 || (okErr && !bestOK) || (okErr == bestOK && r.MedianMS < bestAcc.MedianMS) {
				bestAcc = r
			}
		}
	}
	add("best CUDA-core fp32 step >= 80% of cuBLAS fp32's speed",
		fmt.Sprintf("%s: %s vs cuBLAS fp32 %s = %s", bestCore.Variant, show.MS(bestCore.MedianMS), show.MS(f32), pctOf(f32, bestCore.MedianMS)),
		f32 > 0 && f32/bestCore.MedianMS >= 0.8, f32 > 0 && bestCore.MedianMS > 0)
	errNote := "cuBLAS fp32's error not measured"
	if haveCub {
		errNote = fmt.Sprintf("rel L2 %.2e = %.2fx cuBLAS fp32's %.2e", bestAcc.RelL2, bestAcc.RelL2/cub.RelL2, cub.RelL2)
	}
	add("float32-accurate tensor-core step >= 2x faster than cuBLAS fp32",
		fmt.Sprintf("%s: %s vs %s = %s", bestAcc.Variant, show.MS(bestAcc.MedianMS), show.MS(f32), show.Ratio(f32, bestAcc.MedianMS)),
		f32 > 0 && f32/bestAcc.MedianMS >= 2, f32 > 0 && bestAcc.MedianMS > 0)
	add("... with rel L2 error <= 4x cuBLAS fp32's", errNote, haveCub && bestAcc.RelL2 <= 4*cub.RelL2, haveCub && bestAcc.MedianMS > 0)
	add("TF32 step >= 70% of cuBLAS TF32's speed",
		fmt.Sprintf("%s: %s vs cuBLAS TF32 %s = %s", bestTF32.Variant, show.MS(bestTF32.MedianMS), show.MS(t32), pctOf(t32, bestTF32.MedianMS)),
		t32 > 0 && t32/bestTF32.MedianMS >= 0.7, t32 > 0 && bestTF32.MedianMS > 0)
	worst, at, ok := awkwardShare(run)
	add("Multiply >= 70% of cuBLAS fp32's speed on every awkward shape",
		fmt.Sprintf("slowest: %.0f%% at %s", 100*worst, at), ok && worst >= 0.7, ok)
	markRefused(run, t)
	t.Caption = "From this run's own medians and errors. Measured: " + run.Receipt.String()
	return t.Table
}

// refusedIn are the run's refused steps (lab.RefusedRecord), by name.
func refusedIn(run *record.Run) map[string]record.Record {
	out := map[string]record.Record{}
	for _, r := range lab.Refused(run) {
		out[r.Variant] = r
	}
	return out
}

// targetDTypes are the formats of the steps each target judges, by the target's row.
var targetDTypes = [][]string{{"float32"}, {"3xtf32", "fp16x3", "bf16x3"}, {"3xtf32", "fp16x3", "bf16x3"}, {"tf32"}}

// markRefused says, in a target the run could not judge because the GPU refused the steps it is
// about, so: "not measured: refused on this GPU" and the refused steps, rather than a bare "not measured".
func markRefused(run *record.Run, t *show.Targets) {
	refused := refusedIn(run)
	for i, row := range t.Rows {
		if i >= len(targetDTypes) || row[2] != "not measured" {
			continue
		}
		var names []string
		for _, st := range Steps {
			if _, no := refused[st.Name]; no && slices.Contains(targetDTypes[i], st.DType) {
				names = append(names, st.Name)
			}
		}
		if len(names) > 0 {
			t.Rows[i][1] = "refused on this GPU: " + strings.Join(names, ", ")
			t.Rows[i][2] = "not measured: refused on this GPU"
		}
	}
}

// shownReports are the run's compile reports less those of kernels that only refused steps use.
func shownReports(run *record.Run) []record.KernelReport {
	refused := refusedIn(run)
	if len(refused) == 0 {
		return run.Kernels
	}
	used := map[string]bool{}
	for _, st := range append(append([]Step{}, Steps...), Variants...) {
		if _, no := refused[st.Name]; !no {
			used[st.Kernel] = true
		}
	}
	var out []record.KernelReport
	for _, k := range run.Kernels {
		if used[k.Kernel] {
			out = append(out, k)
		}
	}
	return out
}

func pctOf(base, mine float64) string {
	if base <= 0 || mine <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f%% of its speed", 100*base/mine)
}

// Tables are the lesson's tables from a run.
func Tables(run *record.Run) []show.Table {
	return []show.Table{LadderTable(run), VariantTable(run), AccuracyTable(run), ArticleTable(run), KernelBenchTable(run), FastPTable(run),
		SweepTable(run), NonSquareTable(run), BankTable(), Targets(run), show.Reports("Compile reports at 4096^3", shownReports(run))}
}

// Figures are the time and throughput per step, the roofline, the error per kernel and the sweep.
func Figures(run *record.Run) ([]lab.Figure, error) {
	var figs []lab.Figure
	var labels []string
	var times, tf []float64
	var pts []charts.Point
	for _, r := range run.Select("matmul") {
		if Unavailable(r) {
			continue
		}
		labels = append(labels, r.Variant)
		times = append(times, r.MedianMS)
		tf = append(tf, r.GFLOPs/1e3)
		pts = append(pts, charts.Point{Name: r.Variant, Intensity: Article.Intensity(), GFLOPs: r.GFLOPs})
	}
	if len(labels) > 0 {
		p, err := charts.Bars("C = A·B at 4096^3: median time", "median time (ms)", labels, []charts.Series{{Name: "4096^3", Values: times}}, true, 0)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: "03_time", Plot: p})
		p, err = charts.Bars("C = A·B at 4096^3: throughput", "TFLOP/s (dashed: the FP32 peak)", labels, []charts.Series{{Name: "4096^3", Values: tf}}, false, run.Receipt.PeakGFLOPS/1e3)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: "03_tflops", Plot: p})
		p, err = charts.Roofline("Every step on the roofline (683 FLOP/byte at 4096^3)", run.Receipt.CopyGBps, run.Receipt.PeakGFLOPS, pts)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: "03_roofline", Plot: p})
	}
	var el []string
	var ev []float64
	for _, r := range append(run.Select("matmul"), run.Select("variant")...) {
		if r.RelL2 > 0 {
			el = append(el, r.Variant)
			ev = append(ev, r.RelL2)
		}
	}
	if len(el) > 0 {
		p, err := charts.Bars("Relative L2 error against float64 at 4096^3", "rel L2 error", el, []charts.Series{{Name: "error", Values: ev}}, true, 0)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: "03_error", Plot: p})
	}
	lines := lab.SweepLines(run.Select("sweep"), func(r record.Record) float64 { return r.GFLOPs / 1e3 })
	if len(lines) > 0 {
		p, err := charts.Lines("Throughput against size (n x n x n)", "n", "TFLOP/s", lines, true, true)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: "03_sweep", Plot: p})
	}
	return figs, nil
}

package hopper

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/charts"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
	"github.com/cudalessons/cudalessons/lessons/conv"
	"github.com/cudalessons/cudalessons/lessons/matmul"
	"gonum.org/v1/plot"
)

func tflops(r record.Record) string {
	if r.GFLOPs <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f", r.GFLOPs/1e3)
}

// share is mine's speed as a share of base's (base / mine), or "—".
func share(base, mine float64) string {
	if base <= 0 || mine <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", 100*base/mine)
}

// LadderTable is every step, variant and baseline in one format at 4096^3: time, throughput, share
// of the tensor-core peak, speed as a share of cuBLAS's in the same run, and the check.
func LadderTable(run *record.Run, dtype string) show.Table {
	recs := run.Select(dtype)
	peakHeader, peakCell := show.PeakColumn(run.Receipt, recs)
	t := show.Table{Title: fmt.Sprintf("C = A·B in %s at 4096 x 4096 x 4096 (137 GFLOP): every step and cuBLAS, one run", dtype),
		Header: []string{"step", "median", "min .. max", "TFLOP/s", peakHeader, "share of cuBLAS's speed", "check against float64"}}
	base := run.Median(dtype, VendorName(dtype))
	for _, r := range recs {
		if r.MedianMS <= 0 {
			t.Rows = append(t.Rows, []string{r.Variant, "unavailable", "", "", "", "", r.Note})
			continue
		}
		t.Rows = append(t.Rows, []string{r.Variant, show.MS(r.MedianMS), show.MS(r.MinMS) + " .. " + show.MS(r.MaxMS), tflops(r), peakCell(r),
			share(base, r.MedianMS), matmul.Verdict(r)})
	}
	t.Caption = show.Sentences("Medians of the suite's method (CUDA events, warm-up, L2 flushed before each run); shares are ratios of medians of this run. "+
		"Inputs and output in "+dtype+", sums in float32; each kernel is checked on a NaN-poisoned output at 4 full rows, 4 full columns and 512 random elements "+
		"against the float64 product of the same 16-bit inputs. The steps are compiled for compute_90a (Hopper's architecture-specific instructions).", show.PeakNote(run.Receipt, recs), "Measured: "+run.Receipt.String())
	return t
}

// AccurateTable is the float32 case: the split step beside cuBLAS in float32 and TF32 and lesson
// 03's split, with each one's error on the same inputs against float64.
func AccurateTable(run *record.Run) show.Table {
	t := show.Table{Title: "Float32 in and out at 4096^3: the split and TF32 on wgmma, cuBLAS, and lesson 03's split",
		Header: []string{"kernel", "products", "median", "TFLOP/s", "speedup over cuBLAS fp32", "rel L2 error against float64", "check"}}
	base := run.Median(Float32, matmul.TorchFP32)
	for _, r := range run.Select(Float32) {
		if r.MedianMS <= 0 {
			t.Rows = append(t.Rows, []string{r.Variant, r.DType, "unavailable", "", "", "", r.Note})
			continue
		}
		t.Rows = append(t.Rows, []string{r.Variant, r.DType, show.MS(r.MedianMS), tflops(r), show.Ratio(base, r.MedianMS), fmt.Sprintf("%.2e", r.RelL2), matmul.Verdict(r)})
	}
	t.Caption = "Every error is on the same inputs (uniform in [-1, 1)) and the same sampled elements (4 full rows, 4 full columns, 512 random elements) against the float64 product. " +
		"The split's time includes splitting A and B into their fp16 halves, TF32's the transpose of B. Measured: " + run.Receipt.String()
	return t
}

// AwkwardTable is the split, what Multiply runs on Hopper, on lesson 03's awkward float32 shapes
// beside cuBLAS fp32.
func AwkwardTable(run *record.Run) show.Table {
	t := show.Table{Title: "Float32 shapes off every tile (lesson 03's awkward shapes): what Multiply runs on Hopper beside cuBLAS fp32",
		Header: []string{"shape", "kernel", "median", "TFLOP/s", "share of cuBLAS fp32's speed", "Multiply's pick", "check"}}
	for _, r := range run.Select(Awkward) {
		vs, picked := "—", ""
		if r.Variant != matmul.TorchFP32 {
			vs = share(awkwardFP32(run, r.Shape), r.MedianMS)
		}
		if strings.HasSuffix(r.Note, "what Multiply runs on this shape") {
			picked = "yes"
		}
		t.Rows = append(t.Rows, []string{r.Shape, r.Variant, show.MS(r.MedianMS), tflops(r), vs, picked, matmul.Verdict(r)})
	}
	t.Caption = "Every output of the small shapes, and a sample of the large ones, checked against float64 before timing; the split's time includes splitting (and padding) A and B. " +
		"Multiply runs the split from 2^28 multiply-adds up and lesson 03's pick below, where the split's own passes cost more than they save."
	return t
}

// awkwardFP32 is cuBLAS fp32's median at one of the awkward shapes, or 0.
func awkwardFP32(run *record.Run, shape string) float64 {
	for _, r := range run.Select(Awkward) {
		if r.Variant == matmul.TorchFP32 && r.Shape == shape {
			return r.MedianMS
		}
	}
	return 0
}

// ShapesTable is the last step on shapes off its tiles, beside cuBLAS fp16.
func ShapesTable(run *record.Run) show.Table {
	t := show.Table{Title: "Shapes off the 128 x 256 x 64 tiles (fp16): TMA's zero fill and masked stores, beside cuBLAS",
		Header: []string{"shape", "kernel", "median", "TFLOP/s", "share of cuBLAS's speed", "check"}}
	cub := map[string]float64{}
	for _, r := range run.Select("shapes") {
		if r.Kind == "baseline" {
			cub[r.Shape] = r.MedianMS
		}
	}
	for _, r := range run.Select("shapes") {
		vs := "—"
		if r.Kind == "kernel" {
			vs = share(cub[r.Shape], r.MedianMS)
		}
		t.Rows = append(t.Rows, []string{r.Shape, r.Variant, show.MS(r.MedianMS), tflops(r), vs, matmul.Verdict(r)})
	}
	return t
}

// SweepTable is TFLOP/s against size for the last step and cuBLAS in both formats.
func SweepTable(run *record.Run) show.Table {
	names := []string{sweepName(Best.Name, FP16), sweepName("cuBLAS", FP16), sweepName(Best.Name, BF16), sweepName("cuBLAS", BF16)}
	t := show.Table{Title: "TFLOP/s against size (n x n x n)", Header: append([]string{"n"}, names...)}
	for _, n := range SweepSizes(false) {
		row, found := []string{strconv.Itoa(n)}, false
		for _, v := range names {
			if r, ok := run.Find("sweep", v, int64(n)); ok && r.MedianMS > 0 {
				row, found = append(row, tflops(r)), true
			} else {
				row = append(row, "—")
			}
		}
		if found {
			t.Rows = append(t.Rows, row)
		}
	}
	t.Caption = "Each kernel point checked against float64 before it was timed; cuBLAS through torch.matmul in the same run."
	return t
}

// Targets is the closing table: each of the lesson's targets that its steps judge, with the
// figure this run measured, and the targets of formats the lesson has no step for yet, not measured.
func Targets(run *record.Run) show.Table {
	t := show.NewTargets("Targets (4096^3)")
	for _, dtype := range DTypes {
		cub := run.Median(dtype, VendorName(dtype))
		best := fastest(run.Select(dtype), func(r record.Record) bool { return r.Kind == "kernel" && r.Correct })
		t.Add(fmt.Sprintf("%s: the fastest step >= 95%% of cuBLAS %s's speed", dtype, dtype),
			fmt.Sprintf("%s: %s vs cuBLAS %s = %s", best.Variant, show.MS(best.MedianMS), show.MS(cub), share(cub, best.MedianMS)),
			cub > 0 && best.MedianMS > 0 && cub/best.MedianMS >= 0.95, cub > 0 && best.MedianMS > 0)
	}
	fp32 := run.Median(Float32, matmul.TorchFP32)
	split, _ := run.Find(Float32, Split.Name, 0)
	cub, _ := run.Find(Float32, matmul.TorchFP32, 0)
	known := fp32 > 0 && split.MedianMS > 0 && split.Correct
	t.Add("float32-accurate (the split) >= 3x cuBLAS fp32's speed",
		fmt.Sprintf("%s: %s vs cuBLAS fp32 %s = %s", Split.Name, show.MS(split.MedianMS), show.MS(fp32), show.Ratio(fp32, split.MedianMS)),
		known && fp32/split.MedianMS >= 3, known)
	t.Add("... with rel L2 error <= cuBLAS fp32's", fmt.Sprintf("%.2e against cuBLAS fp32's %.2e", split.RelL2, cub.RelL2),
		known && cub.RelL2 > 0 && split.RelL2 <= cub.RelL2, known && cub.RelL2 > 0)
	t32 := run.Median(Float32, matmul.TorchTF32)
	tf, _ := run.Find(Float32, TF32.Name, 0)
	known = t32 > 0 && tf.MedianMS > 0 && tf.Correct
	t.Add("TF32 >= 85% of cuBLAS TF32's speed", fmt.Sprintf("%s: %s vs cuBLAS TF32 %s = %s", TF32.Name, show.MS(tf.MedianMS), show.MS(t32), share(t32, tf.MedianMS)),
		known && t32/tf.MedianMS >= 0.85, known)
	worst, at, have := 0.0, "", false
	for _, r := range run.Select(Awkward) {
		if !strings.HasSuffix(r.Note, "what Multiply runs on this shape") || !r.Correct || r.MedianMS <= 0 {
			continue
		}
		if b := awkwardFP32(run, r.Shape); b > 0 && (!have || b/r.MedianMS < worst) {
			worst, at, have = b/r.MedianMS, r.Shape, true
		}
	}
	t.Add("Multiply (the split from 2^28 multiply-adds, lesson 03's pick below) >= 70% of cuBLAS fp32's speed on every awkward shape", fmt.Sprintf("slowest: %.0f%% at %s", 100*worst, at), have && worst >= 0.7, have)
	tdn, tdnName := fastestCuDNNTF32(run)
	bestConv := fastest(run.Select(ConvCase), func(r record.Record) bool {
		return r.Correct && slices.ContainsFunc(AllConvs(), func(st Step) bool { return st.Name == r.Variant })
	})
	known = tdn > 0 && bestConv.MedianMS > 0
	t.Add("deep 3x3 convolution (8,256,56,56) -> 256 no slower than cuDNN TF32 (FP16 or TF32, its error stated)",
		fmt.Sprintf("%s: %s with its layout passes, rel L2 %.2e, vs %s %s = %s", bestConv.Variant, show.MS(bestConv.MedianMS), bestConv.RelL2, tdnName, show.MS(tdn), show.Ratio(tdn, bestConv.MedianMS)),
		known && bestConv.MedianMS <= tdn, known)
	if refused := lab.Refused(run); len(refused) > 0 {
		for i := range t.Rows {
			t.Rows[i][1], t.Rows[i][2] = "refused on this GPU: "+refused[0].Note, "not measured: refused on this GPU"
		}
	}
	t.Caption = "From this run's own medians. Measured: " + run.Receipt.String()
	return t.Table
}

// fastestCuDNNTF32 is the faster of cuDNN's TF32 forms in the run (PyTorch's default choice and
// cudnn.benchmark's), with its name; 0 when neither was measured.
func fastestCuDNNTF32(run *record.Run) (float64, string) {
	r := fastest(run.Select(ConvCase), func(r record.Record) bool {
		return r.Kind == "baseline" && r.DType == conv.TF32 && strings.HasPrefix(r.Variant, "cuDNN")
	})
	return r.MedianMS, r.Variant
}

// fastest is the timed record of recs with the smallest median among those keep accepts, or the
// zero record when none is.
func fastest(recs []record.Record, keep func(record.Record) bool) record.Record {
	var best record.Record
	for _, r := range recs {
		if r.MedianMS > 0 && keep(r) && (best.MedianMS == 0 || r.MedianMS < best.MedianMS) {
			best = r
		}
	}
	return best
}

// ConvTable is the deep convolution: steps 7 and 8 (with their layout passes, and the product
// alone), cuDNN in every form, and lesson 05's fastest steps, with each one's error on the same
// inputs against float64.
func ConvTable(run *record.Run) show.Table {
	t := show.Table{Title: "Lesson 05's deep layer, " + conv.Deep.String() + " (29.6 GFLOP): implicit GEMM on wgmma beside cuDNN",
		Header: []string{"kernel", "format", "median", "TFLOP/s", "speedup over cuDNN TF32", "rel L2 error against float64", "check"}}
	base, name := fastestCuDNNTF32(run)
	for _, r := range run.Select(ConvCase) {
		if r.MedianMS <= 0 {
			t.Rows = append(t.Rows, []string{r.Variant, r.DType, "unavailable", "", "", "", r.Note})
			continue
		}
		t.Rows = append(t.Rows, []string{r.Variant, r.DType, show.MS(r.MedianMS), tflops(r), show.Ratio(base, r.MedianMS), fmt.Sprintf("%.2e", r.RelL2), matmul.Verdict(r)})
	}
	t.Caption = show.Sentences("Every kernel on the same inputs (x uniform in [-1, 1), filters scaled by 1/sqrt(2304), bias), its output NaN-poisoned first, every output scanned for NaN and a random sample compared with the float64 convolution. "+
		"Steps 7 and 8 take x in NCHW float32 and write y in NCHW float32: their times include copying x to NHWC and the filters to the step's layout; the \"product alone\" rows are the product kernel without those passes. "+
		"cuDNN runs through F.conv2d (its fp16 forms take and return half), and torch.compile compiles the same call; the speedups are over "+name+", the faster of cuDNN's TF32 forms in this run.", "Measured: "+run.Receipt.String())
	return t
}

// Tables are the lesson's tables from a run.
func Tables(run *record.Run) []show.Table {
	out := []show.Table{LadderTable(run, FP16), LadderTable(run, BF16), AccurateTable(run), AwkwardTable(run), ShapesTable(run), SweepTable(run), ConvTable(run), Targets(run)}
	if rt, ok := lab.RefusedTable(run); ok {
		out = append(out, rt)
	}
	return append(out, show.Reports("Compile reports at 4096^3 (fp16)", stepReports(run)))
}

// stepReports are the run's compile reports, one per kernel and source (a run before the variants'
// reports were left out holds one per variant too, which builds the same kernel with other defines).
func stepReports(run *record.Run) []record.KernelReport {
	var out []record.KernelReport
	seen := map[[2]string]bool{}
	for _, k := range run.Kernels {
		if key := [2]string{k.Kernel, k.Source}; !seen[key] {
			seen[key] = true
			out = append(out, k)
		}
	}
	return out
}

// Figures are the throughput per step in both formats beside cuBLAS, the sweep, and the swizzle.
func Figures(run *record.Run) ([]lab.Figure, error) {
	var figs []lab.Figure
	var labels []string
	vals := map[string][]float64{}
	for _, st := range append(append([]Step{}, Steps...), Variants...) {
		labels = append(labels, st.Name)
		for _, dtype := range DTypes {
			r, _ := run.Find(dtype, st.Name, 0)
			vals[dtype] = append(vals[dtype], r.GFLOPs/1e3)
		}
	}
	labels = append(labels, "cuBLAS")
	for _, dtype := range DTypes {
		r, _ := run.Find(dtype, VendorName(dtype), 0)
		vals[dtype] = append(vals[dtype], r.GFLOPs/1e3)
	}
	if vals[FP16][len(labels)-1] > 0 || vals[FP16][0] > 0 {
		var series []charts.Series
		for _, dtype := range DTypes {
			series = append(series, charts.Series{Name: dtype, Values: vals[dtype]})
		}
		cub, _ := run.Find(FP16, VendorName(FP16), 0)
		p, err := charts.Bars("C = A·B at 4096^3: TFLOP/s per step (dashed: cuBLAS fp16)", "TFLOP/s", labels, series, false, cub.GFLOPs/1e3)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: "08_tflops", Plot: p})
	}
	lines := lab.SweepLines(run.Select("sweep"), func(r record.Record) float64 { return r.GFLOPs / 1e3 })
	if len(lines) > 0 {
		p, err := charts.Lines("Throughput against size (n x n x n)", "n", "TFLOP/s", lines, true, false)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: "08_sweep", Plot: p})
	}
	if p, err := convFigure(run); err != nil {
		return nil, err
	} else if p != nil {
		figs = append(figs, lab.Figure{Name: "08_conv", Plot: p})
	}
	sw, err := SwizzleFigure()
	if err != nil {
		return nil, err
	}
	return append(figs, lab.Figure{Name: "08_swizzle", Plot: sw}), nil
}

// convFigure is the deep convolution's TFLOP/s per kernel (useful work: 29.6 GFLOP), with cuDNN
// TF32's as a dashed line; nil when nothing of it was timed.
func convFigure(run *record.Run) (*plot.Plot, error) {
	var labels []string
	var vals []float64
	for _, r := range run.Select(ConvCase) {
		if r.MedianMS > 0 {
			labels, vals = append(labels, r.Variant), append(vals, r.GFLOPs/1e3)
		}
	}
	if len(vals) == 0 {
		return nil, nil
	}
	base, _ := fastestCuDNNTF32(run)
	line := 0.0
	if base > 0 {
		line = conv.Work(conv.Deep).FLOPs / (base * 1e-3) / 1e12
	}
	return charts.Bars("Deep 3x3 convolution (8,256,56,56) -> 256: TFLOP/s (dashed: cuDNN TF32)", "TFLOP/s", labels, []charts.Series{{Name: "TFLOP/s", Values: vals}}, false, line)
}

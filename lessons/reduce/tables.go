package reduce

import (
	"fmt"
	"math"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// Article is the article's table for the two problems of this lesson (L40S, fp32 inputs,
// KernelBench's check at atol = rtol = 1e-2): its result is PyTorch eager's time over the
// generated kernel's, as a percentage.
var Article = []struct {
	Problem, Workload, Idea string
	Pct                     float64
}{
	{"Softmax", "(4096, 65536), dim=1", "one block per row, float4 loads, max then exp-sum, shared-memory tree", 111.8},
	{"LayerNorm", "(16, 64, 256, 256) over the last 3 dims", "several blocks per sample, sum and sum-of-squares partials, float4", 484.4},
}

const articleSource = "Article: Stanford CRFM, \"Surprisingly Fast AI-Generated Kernels We Didn't Mean to Publish (Yet)\" (2025), NVIDIA L40S; its % is eager PyTorch's time over the kernel's."

func find(run *record.Run, caseName, variant string, size int64) (record.Record, bool) {
	r, ok := run.Find(caseName, variant, size)
	return r, ok && r.MedianMS > 0
}

// best is the fastest correct kernel record of a case (at a size, when not zero).
func best(run *record.Run, caseName string, size int64) (record.Record, bool) {
	var b record.Record
	ok := false
	for _, r := range run.Select(caseName) {
		if r.Kind == "kernel" && r.Correct && r.MedianMS > 0 && (size == 0 || r.Size == size) && (!ok || r.MedianMS < b.MedianMS) {
			b, ok = r, true
		}
	}
	return b, ok
}

func msOf(r record.Record, ok bool) string {
	if !ok {
		return "unavailable"
	}
	return bench.FormatMS(r.MedianMS)
}

func ratio(num, den record.Record, nok, dok bool) (float64, string) {
	if !nok || !dok || den.MedianMS <= 0 {
		return 0, "unavailable"
	}
	v := num.MedianMS / den.MedianMS
	return v, show.Times(v)
}

func unavailableNote(run *record.Run) string {
	for _, r := range run.Records {
		if r.Case == "unavailable" {
			return " PyTorch: " + r.Note
		}
	}
	return ""
}

// Tables are every table of the lesson, section by section, then the targets and compile reports.
func Tables(run *record.Run) []show.Table {
	var out []show.Table
	for _, sec := range Sections {
		out = append(out, SectionTables(run, sec)...)
	}
	return append(out, ArticleTable(run), TargetsTable(run), show.Reports("Compile reports", run.Kernels))
}

// SectionTables are the tables of one section.
func SectionTables(run *record.Run, section string) []show.Table {
	bytesNote := "Bytes counted: the minimum traffic (x read once, y written once; for layer norm also w and b once). "
	switch section {
	case SecSoftmax:
		out := []show.Table{
			withCaption(show.Records("Softmax of (4096, 65536) float32 over dim 1: every step", run.Select(CaseSoftmax), run.Receipt, Eager, Compiled), bytesNote),
			withCaption(show.Records("Softmax in 16 bits, (4096, 65536): float arithmetic, one rounding per output", run.Select(CaseSoftmax16), run.Receipt, Eager, Compiled), bytesNote),
			withCaption(show.Records("Short rows: (65536, 128) float32", run.Select(CaseShortRows), run.Receipt, Eager, Compiled), bytesNote),
			withCaption(show.Records(fmt.Sprintf("Row length sweep at %d elements (rows = %d / cols)", SoftmaxTotal, SoftmaxTotal), run.Select(CaseSoftmaxSweep), run.Receipt), bytesNote),
			withCaption(show.Records(fmt.Sprintf("KernelBench's softmax (level 1, problem 23): (%d, %d) float32, 12.9 GB moved", LongRows[0], LongRows[1]), run.Select(CaseLongRows), run.Receipt, Eager, Compiled), bytesNote),
			ZerosTable(run),
		}
		return out
	case SecLayerNorm:
		return []show.Table{
			withCaption(show.Records("Layer norm of (16, 64, 256, 256) over the last three dims: every step", run.Select(CaseLN), run.Receipt, Eager, Compiled), bytesNote),
			withCaption(show.Records("Layer norm backward (dx, dw, db)", append(run.Select(CaseLNBackward), run.Select(CaseLNFwdBwd)...), run.Receipt), "Backward bytes: x, dy, w read once, dx, dw, db written once; forward+backward adds the forward's. "),
			StabilityTable(run),
			withCaption(show.Records(fmt.Sprintf("Normalised size sweep at %d elements (N = %d / M)", LNSweepTotal, LNSweepTotal), run.Select(CaseLNSweep), run.Receipt), bytesNote),
		}
	}
	return nil
}

func withCaption(t show.Table, prefix string) show.Table {
	t.Caption = prefix + t.Caption
	return t
}

// ZerosTable shows the all-zero softmax output against both checks.
func ZerosTable(run *record.Run) show.Table {
	t := show.Table{Title: "Returning zeros: the article's check against this lesson's (rows of 65536)", Header: []string{"check", "max abs error", "rel L2 error", "verdict on zeros"}}
	for _, r := range run.Select(CaseZeros) {
		v := "rejected"
		if r.Correct {
			v = "PASSES (wrongly)"
		}
		t.Rows = append(t.Rows, []string{r.Variant, fmt.Sprintf("%.2g", r.MaxAbs), fmt.Sprintf("%.2g", r.RelL2), v})
	}
	t.Caption = "Each output of a 65536-column softmax is about 1.5e-5, so zeros are within atol = 1e-2 of every one. The relative L2 error of zeros is 1: a norm check catches them."
	return t
}

// StabilityTable shows steps 2-4 on inputs with mean 1000 and standard deviation 0.1.
func StabilityTable(run *record.Run) show.Table {
	t := show.Table{Title: "Mean 1000, standard deviation 0.1: sum of squares against Welford", Header: []string{"step", "rel L2 error", "bound", "verdict", "time"}}
	for _, r := range run.Select(CaseStability) {
		v := "within tolerance"
		if !r.Correct {
			v = "FAILS"
		}
		t.Rows = append(t.Rows, []string{r.Variant, fmt.Sprintf("%.3g", r.RelL2), fmt.Sprintf("%.1e", ShiftedTolerance.RelL2), v, bench.FormatMS(r.MedianMS)})
	}
	t.Caption = ShiftedTolerance.Why + ". The reference is float64 on the same float32 inputs."
	return t
}

// ArticleTable puts the article's results beside this run's.
func ArticleTable(run *record.Run) show.Table {
	t := show.Table{Title: "The article's table beside this GPU", Header: []string{"problem", "workload", "article: eager / kernel (L40S)", "best step here", "time here", "vs eager here", "vs torch.compile here"}}
	for i, a := range Article {
		c := CaseSoftmax
		if i == 1 {
			c = CaseLN
		}
		b, ok := best(run, c, 0)
		e, eok := find(run, c, Eager, 0)
		k, kok := find(run, c, Compiled, 0)
		_, ve := ratio(e, b, eok, ok)
		_, vk := ratio(k, b, kok, ok)
		name := "unavailable"
		if ok {
			name = b.Variant
		}
		t.Rows = append(t.Rows, []string{a.Problem, a.Workload, fmt.Sprintf("%.1f%%", a.Pct), name, msOf(b, ok), ve, vk})
	}
	t.Caption = articleSource + " Its layer norm baseline (eager PyTorch on 16 rows of 4M elements) is pathological; torch.compile is the fair one." + unavailableNote(run)
	return t
}

// Target is one of the lesson's goals with the figure that meets it or not.
type Target struct {
	Goal    string
	Figure  string
	Met     bool
	Known   bool
	Refused bool // not measured because this GPU cannot run the step
}

// Targets checks the lesson's goals on a run's own figures.
func Targets(run *record.Run) []Target {
	var out []Target
	b, ok := best(run, CaseSoftmax, 0)
	tg := Target{Goal: "softmax (4096, 65536) fp32: best step >= 85% of copy bandwidth at the minimum traffic (x read once, y written once: 2 GiB)", Known: ok}
	if ok {
		tg.Figure, tg.Met = fmt.Sprintf("%s: %s, %s", b.Variant, bench.FormatMS(b.MedianMS), show.Pct(b.PctBW)), b.PctBW >= 85
	}
	out = append(out, tg)
	k, kok := find(run, CaseSoftmax, Compiled, 0)
	v, fig := ratio(k, b, kok, ok)
	out = append(out, Target{Goal: "softmax: best step >= 1.3x faster than torch.compile (same run)", Known: ok && kok,
		Figure: fmt.Sprintf("%s vs %s: %s", msOf(b, ok), msOf(k, kok), fig), Met: v >= 1.3})
	out = append(out, sweepTarget(run))
	lb, lbok := best(run, CaseLongRows, 0)
	lc, lcok := find(run, CaseLongRows, Compiled, 0)
	v, fig = ratio(lc, lb, lcok, lbok)
	out = append(out, Target{Goal: fmt.Sprintf("softmax (%d, %d), KernelBench's problem 23: best step >= 1.3x faster than torch.compile (same run)", LongRows[0], LongRows[1]),
		Known: lbok && lcok, Figure: fmt.Sprintf("%s (%s) vs %s: %s", msOf(lb, lbok), lb.Variant, msOf(lc, lcok), fig), Met: v >= 1.3})
	l, lok := best(run, CaseLN, 0)
	lk, lkok := find(run, CaseLN, Compiled, 0)
	v, fig = ratio(lk, l, lkok, lok)
	out = append(out, Target{Goal: "layer norm forward (16, 64, 256, 256): best step at least as fast as torch.compile", Known: lok && lkok,
		Figure: fmt.Sprintf("%s vs %s: %s", msOf(l, lok), msOf(lk, lkok), fig), Met: v >= 1})
	le, leok := find(run, CaseLN, Eager, 0)
	v, fig = ratio(le, l, leok, lok)
	out = append(out, Target{Goal: "layer norm forward: best step >= 25x faster than eager F.layer_norm", Known: lok && leok,
		Figure: fmt.Sprintf("%s vs %s: %s", msOf(l, lok), msOf(le, leok), fig), Met: v >= 25})
	ls, lsok := best(run, CaseLNSweep, WarpRowMax)
	lse, lseok := find(run, CaseLNSweep, Eager, WarpRowMax)
	v, fig = ratio(lse, ls, lseok, lsok)
	out = append(out, Target{Goal: fmt.Sprintf("layer norm of short samples (%d x %d): best step at least as fast as eager F.layer_norm", LNSweepTotal/WarpRowMax, WarpRowMax),
		Known: lsok && lseok, Figure: fmt.Sprintf("%s (%s) vs %s: %s", msOf(ls, lsok), ls.Variant, msOf(lse, lseok), fig), Met: v >= 1})
	for _, st := range LNSteps[2:] {
		s := st.Name
		r, rok := run.Find(CaseStability, s, 0)
		tg := Target{Goal: fmt.Sprintf("mean 1000, std 0.1: %s within its float32 tolerance (rel L2 <= %.1e)", s, ShiftedTolerance.RelL2), Known: rok,
			Figure: fmt.Sprintf("rel L2 %.3g", r.RelL2), Met: rok && r.Correct}
		if _, refused := run.Find(lab.RefusedCase, s, 0); refused && !rok {
			tg.Refused, tg.Figure = true, "—"
		}
		out = append(out, tg)
	}
	r, rok := run.Find(CaseStability, LNSteps[1].Name, 0)
	out = append(out, Target{Goal: "mean 1000, std 0.1: the article's sum of squares (step 2) is shown failing", Known: rok,
		Figure: fmt.Sprintf("rel L2 %.3g", r.RelL2), Met: rok && !r.Correct})
	kb, kbok := run.Find(CaseZeros, "KernelBench allclose(atol=rtol=1e-2)", 0)
	ours, ook := run.Find(CaseZeros, "this lesson's check (fp32)", 0)
	out = append(out, Target{Goal: "an all-zero softmax passes atol=rtol=1e-2 and fails this lesson's check", Known: kbok && ook,
		Figure: fmt.Sprintf("KernelBench: pass=%v; ours: pass=%v (rel L2 %.2g)", kb.Correct, ours.Correct, ours.RelL2), Met: kb.Correct && !ours.Correct})
	return out
}

// sweepTarget is the any-length goal: at every row length of the sweep, the best step reaches 85%
// of the copy bandwidth; its figure is the worst length.
func sweepTarget(run *record.Run) Target {
	t := Target{Goal: fmt.Sprintf("softmax at every row length of the sweep (%d floats, lengths 1024 to 1,048,576 and off multiples of 4): best step >= 85%% of copy bandwidth", SoftmaxTotal)}
	sizes := map[int64]bool{}
	for _, r := range run.Select(CaseSoftmaxSweep) {
		if r.Kind == "kernel" {
			sizes[r.Size] = true
		}
	}
	var worst record.Record
	for size := range sizes {
		b, ok := best(run, CaseSoftmaxSweep, size)
		if ok && (!t.Known || b.PctBW < worst.PctBW) {
			worst, t.Known = b, true
		}
	}
	if t.Known {
		t.Figure = fmt.Sprintf("worst: %d floats per row, %s at %s", worst.Size, worst.Variant, show.Pct(worst.PctBW))
		t.Met = worst.PctBW >= 85
	}
	return t
}

// TargetsTable shows Targets.
func TargetsTable(run *record.Run) show.Table { return TargetsTableOf(run, "") }

// TargetSection is the section a target's goal belongs to: SecSoftmax (the softmax goals and the
// all-zero softmax check) or SecLayerNorm (the layer norm goals and the mean-1000 test).
func TargetSection(g Target) string {
	if strings.HasPrefix(g.Goal, "softmax") || strings.HasPrefix(g.Goal, "an all-zero softmax") {
		return SecSoftmax
	}
	return SecLayerNorm
}

// TargetsTableOf shows the Targets of one section (all of them when section is empty).
func TargetsTableOf(run *record.Run, section string) show.Table {
	t := show.Table{Title: "The lesson's targets, met or not, on this run", Header: []string{"goal", "figure", "verdict"}}
	for _, g := range Targets(run) {
		if section != "" && TargetSection(g) != section {
			continue
		}
		v := "not met"
		switch {
		case g.Refused:
			v = "not measured: refused on this GPU"
		case !g.Known:
			v, g.Figure = "not measured", "unavailable"
		case g.Met:
			v = "met"
		}
		t.Rows = append(t.Rows, []string{g.Goal, g.Figure, v})
	}
	t.Caption = "Measured: " + run.Receipt.String()
	return t
}

// pct is a safe percentage for charts.
func pct(r record.Record, ok bool) float64 {
	if !ok || math.IsNaN(r.PctBW) {
		return 0
	}
	return r.PctBW
}

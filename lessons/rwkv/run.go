package rwkv

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/charts"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// Lesson is lesson 01 for the reproduce command.
var Lesson = lab.Lesson{ID: ID, Title: "The RWKV time-mix kernel: from naive to register tiles and tensor cores",
	Run: Run, Tables: Tables, Figures: Figures, Exercises: Exercises}

// Torch is the variant name of the PyTorch baseline in the records.
const Torch = "PyTorch"

// TorchCompile is the variant name of torch.compile of the same expression.
const TorchCompile = "torch.compile"

// SweepTs are the T of the sweep (B and C stay the article's).
func SweepTs(quick bool) []int {
	if quick {
		return []int{64, 256, 1024}
	}
	return []int{64, 128, 256, 512, 768, 1024}
}

// CheckRows is how many (b,c) rows Run compares with the reference: all of them at the table's
// shape (quick: 2048 random rows), 64 random rows per sweep point.
func CheckRows(quick bool) int {
	if quick {
		return 2048
	}
	return 0
}

// measureBackward measures every step of the backward ladder (BackwardSteps, backward.go) at shape
// s: each checked against BackwardDK and BackwardDW on checkRows rows (and as many channels), then
// timed; with the compile reports of its kernels.
// A step the GPU cannot run (StepChecks) is left out.
func measureBackward(env *lab.Env, s Shape, checkRows int) ([]record.Record, []record.KernelReport, error) {
	refused := refusedOn(env.Device())
	p, err := NewBackwardProblem(env, s, ArticleSeed, checkRows)
	if err != nil {
		return nil, nil, err
	}
	defer p.Free()
	var recs []record.Record
	var reps []record.KernelReport
	for _, st := range BackwardSteps {
		if _, no := refused[st.Name]; no {
			continue
		}
		rec, err := p.Measure(st)
		if err != nil {
			return nil, nil, err
		}
		recs = append(recs, rec)
		if r, err := p.Reports(st); err == nil {
			reps = append(reps, r...)
		}
	}
	return recs, reps, nil
}

// Run measures, at the article's shape: the PyTorch baseline (forward, forward+backward, and a
// cross-check of its output against our reference), every forward step (checked, then timed), the
// backward steps, and the T sweep.
//
// A step the GPU cannot run (StepChecks) is neither compiled nor launched anywhere in the run (not
// at the sweep's smaller T either): the run ends with a refused record for each, saying why and
// which step runs instead.
func Run(env *lab.Env, quick bool) (*record.Run, error) {
	run := env.NewRun(ID)
	refused := refusedOn(env.Device())
	runs := func(name string) bool { _, no := refused[name]; return !no }
	s := ArticleShape
	sweep := SweepTs(quick)
	prog := show.NewProgress("lesson 01", 2+len(Steps)+len(V5Tiles)+len(sweep)*len(Steps))
	defer prog.Done()

	addTorch(env, run, s, sweep)
	prog.Step("PyTorch")

	p, err := NewProblem(env, s, ArticleSeed, CheckRows(quick))
	if err != nil {
		return nil, err
	}
	for _, st := range Steps {
		if !runs(st.Name) {
			prog.Step(st.Name + " (refused)")
			continue
		}
		rec, err := p.Measure(st, "")
		if err != nil {
			p.Free()
			return nil, err
		}
		run.Add(rec)
		if rep, err := p.Report(st); err == nil {
			run.Kernels = append(run.Kernels, rep)
		}
		prog.Step(st.Name)
	}
	for _, tt := range V5Tiles { // the measurement behind v5's tile size
		if !runs(V5Step(tt).Name) {
			prog.Step(V5Step(tt).Name + " (refused)")
			continue
		}
		rec, err := p.Measure(V5Step(tt), "")
		if err != nil {
			p.Free()
			return nil, err
		}
		rec.Case, rec.Size = "tile", int64(tt)
		run.Add(rec)
		prog.Step(rec.Variant)
	}
	p.Free()

	recs, reps, err := measureBackward(env, s, CheckRows(quick))
	if err != nil {
		return nil, fmt.Errorf("rwkv backward: %w", err)
	}
	for _, r := range recs {
		run.Add(r)
	}
	run.Kernels = append(run.Kernels, reps...)
	prog.Step("backward")

	for _, T := range sweep {
		ss := Shape{B: s.B, C: s.C, T: T}
		sp, err := NewProblem(env, ss, ArticleSeed+uint64(T), 64)
		if err != nil {
			return nil, err
		}
		for _, st := range Steps {
			if !runs(st.Name) {
				prog.Step(fmt.Sprintf("%s T=%d refused", st.Name, T))
				continue
			}
			if _, perr := sp.Plan(st); perr != nil {
				prog.Step(fmt.Sprintf("%s T=%d skipped", st.Name, T))
				continue // the step cannot take this T: no record, never a wrong one
			}
			rec, err := sp.Measure(st, "")
			if err != nil {
				sp.Free()
				return nil, err
			}
			rec.Case = "sweep"
			run.Add(rec)
			prog.Step(fmt.Sprintf("%s T=%d", st.Name, T))
		}
		sp.Free()
	}
	for _, c := range StepChecks(env.Device()) {
		if c2, no := refused[c.Step]; no {
			run.Add(lab.RefusedRecord(c2))
		}
	}
	return run, nil
}

// addTorch adds the PyTorch records; when PyTorch cannot run, one record says why.
func addTorch(env *lab.Env, run *record.Run, s Shape, sweep []int) {
	base := record.Record{Case: "forward", Variant: Torch, Kind: "baseline", DType: "float32", Shape: s.String(), Size: int64(s.T),
		Note: TorchExpression + ", fp32, TF32 off"}
	tr, err := RunTorch(s, sweep, env.Bench.Method)
	if err != nil {
		base.Note = "unavailable: " + err.Error()
		run.Add(base)
		return
	}
	run.Receipt.Torch = tr.Torch
	run.Add(env.WithTiming(base, ForwardWork(s), tr.Forward.Bench()))
	fb := base
	fb.Case, fb.Note = "fwdbwd", "forward then out.backward(g): dk and dw"
	fbr := env.WithTiming(fb, bench.Work{FLOPs: s.ForwardFLOPs() + s.BackwardFLOPs(), Bytes: s.ForwardBytes() + s.BackwardBytes()}, tr.FwdBwd.Bench())
	run.Add(fbr)
	bw := base
	bw.Case, bw.Note = "backward", "derived: median of forward+backward minus median of forward"
	ms := tr.FwdBwd.MedianMS - tr.Forward.MedianMS
	run.Add(env.WithTiming(bw, BackwardWork(s), bench.Timing{Median: ms, Min: ms, Max: ms}))
	addCompiled(env, run, s, tr)
	for _, T := range sweep {
		if t, ok := tr.Sweep[strconv.Itoa(T)]; ok {
			ss := Shape{B: s.B, C: s.C, T: T}
			r := base
			r.Case, r.Shape, r.Size = "sweep", ss.String(), int64(T)
			run.Add(env.WithTiming(r, ForwardWork(ss), t.Bench()))
		}
	}
	x := record.Record{Case: "crosscheck", Variant: Torch, Kind: "baseline", DType: "float32", Shape: XShape.String(),
		RelL2: tr.Cross.RelL2, MaxAbs: tr.Cross.MaxAbs, Correct: tr.Cross.OK, Tol: tr.Cross.Tol.Name,
		Note: "PyTorch's forward on our inputs (passed through a file) against our float64 reference"}
	if math.IsInf(x.RelL2, 0) || math.IsNaN(x.RelL2) { // JSON has no Inf: keep the verdict, drop the number
		x.RelL2, x.Correct = 0, false
		x.Note += fmt.Sprintf(" (%d non-finite outputs)", tr.Cross.NonFinite)
	}
	run.Add(x)
}

// addCompiled adds torch.compile's forward, forward+backward and derived backward, or records that
// say why it is unavailable.
func addCompiled(env *lab.Env, run *record.Run, s Shape, tr *TorchResult) {
	base := record.Record{Case: "forward", Variant: TorchCompile, Kind: "baseline", DType: "float32", Shape: s.String(), Size: int64(s.T),
		Note: "torch.compile(" + TorchExpression + "), fp32, TF32 off, compiled before timing"}
	if tr.CompileForward == nil {
		base.Note = "unavailable: " + tr.CompileForwardWhy
		run.Add(base)
	} else {
		run.Add(env.WithTiming(base, ForwardWork(s), tr.CompileForward.Bench()))
	}
	fb := base
	fb.Case = "fwdbwd"
	if tr.CompileFwdBwd == nil {
		fb.Note = "unavailable: " + tr.CompileFwdBwdWhy
		run.Add(fb)
		return
	}
	fb.Note = "compiled forward then out.backward(g): dk and dw"
	run.Add(env.WithTiming(fb, bench.Work{FLOPs: s.ForwardFLOPs() + s.BackwardFLOPs(), Bytes: s.ForwardBytes() + s.BackwardBytes()}, tr.CompileFwdBwd.Bench()))
	if tr.CompileForward != nil {
		bw := base
		bw.Case, bw.Note = "backward", "derived: median of compiled forward+backward minus median of compiled forward"
		ms := tr.CompileFwdBwd.MedianMS - tr.CompileForward.MedianMS
		run.Add(env.WithTiming(bw, BackwardWork(s), bench.Timing{Median: ms, Min: ms, Max: ms}))
	}
}

// ArticleRow is one line of the article's table, in milliseconds (0: not given).
type ArticleRow struct {
	Step     string // our step name, or the article's label
	Fwd, Bwd float64
	Note     string
}

// Article is the article's table: times on a GTX 1070M, each ONE profiled iteration under the
// autograd profiler (BlinkDL, RWKV-CUDA, timex_cuda_v0..v3).
var Article = []ArticleRow{
	{Torch, 94, 529, "cuDNN grouped conv with T taps"},
	{"v0 naive", 45, 84, ""},
	{"v1 shared", 17, 43, ""},
	{"v2 float4", 13.5, 31, "the article says 13-14 ms"},
	{"v3 batch group", 3.4, 23, "forward BF=8, backward BB=2"},
	{"v4 balanced", 0, 0, "announced (\"align task lengths\"), never written"},
}

// Article3090 are the article's RTX 3090 numbers: PyTorch and v3, forward and backward (ms).
var Article3090 = []ArticleRow{{Torch, 14, 65, ""}, {"v3 batch group", 0.8, 5.5, ""}}

func articleRow(step string) (ArticleRow, bool) {
	for _, r := range Article {
		if r.Step == step {
			return r, true
		}
	}
	return ArticleRow{}, false
}

// check verdict of a record, for our tables.
func verdictOf(r record.Record) string {
	switch {
	case r.Kind == "baseline":
		return "baseline"
	case r.Correct:
		return fmt.Sprintf("pass, %s (rel L2 %.1e)", r.Tol, r.RelL2)
	}
	return fmt.Sprintf("FAIL (rel L2 %.1e)", r.RelL2)
}

// ForwardTable is the forward ladder at the article's shape: time, throughput, speedups over
// PyTorch and over v0 from the same run, correctness, and the article's GTX 1070M time beside it.
func ForwardTable(run *record.Run) show.Table {
	recs := run.Select("forward")
	peakHeader, peakCell := show.PeakColumn(run.Receipt, recs)
	t := show.Table{Title: "Forward at the article's shape (B=32, C=768, T=768): this run beside the article",
		Header: []string{"step", "median", "min .. max", "TFLOP/s", peakHeader, "vs PyTorch", "vs torch.compile", "vs v0", "check", "article (1070M)", "article vs its PyTorch"}}
	pt, v0 := run.Median("forward", Torch), run.Median("forward", "v0 naive")
	pc := run.Median("forward", TorchCompile)
	for _, r := range recs {
		a, _ := articleRow(r.Variant)
		row := []string{r.Variant}
		if r.MedianMS <= 0 {
			row = append(row, "unavailable", "", "", "", "", "", "", r.Note)
		} else {
			row = append(row, bench.FormatMS(r.MedianMS), bench.FormatMS(r.MinMS)+" .. "+bench.FormatMS(r.MaxMS),
				fmt.Sprintf("%.2f", r.GFLOPs/1e3), peakCell(r), show.Ratio(pt, r.MedianMS), show.Ratio(pc, r.MedianMS), show.Ratio(v0, r.MedianMS), verdictOf(r))
		}
		row = append(row, show.MS(a.Fwd), show.Ratio(94, a.Fwd))
		t.Rows = append(t.Rows, row)
	}
	t.Caption = show.Sentences("Medians of the suite's method (CUDA events, warm-up, L2 flushed before each run) in one process; speedups are ratios of medians of this run. "+
		"TFLOP/s and the share of the peak count 2 FLOPs per multiply-add of the B*C*T(T+1)/2 useful ones (14.5 GFLOP).", show.PeakNote(run.Receipt, recs),
		"The article's numbers are ONE profiled iteration each on a GTX 1070M. Measured: "+run.Receipt.String())
	return t
}

// BackwardTable is the backward at the article's shape (dk and dw), with PyTorch's.
func BackwardTable(run *record.Run) show.Table {
	recs := append(run.Select("backward"), run.Select("fwdbwd")...)
	peakHeader, peakCell := show.PeakColumn(run.Receipt, recs)
	t := show.Table{Title: "Backward at the article's shape (dk and dw): this run beside the article",
		Header: []string{"step", "median", "TFLOP/s", peakHeader, "vs PyTorch backward", "check", "article (1070M)"}}
	pt := run.Median("backward", Torch)
	for _, r := range run.Select("backward") {
		a, _ := articleRow(strings.TrimPrefix(r.Variant, "bwd ")) // the backward ladder's "bwd v3 batch group" is the article's v3
		if r.MedianMS <= 0 {
			t.Rows = append(t.Rows, []string{r.Variant, "unavailable", "", "", "", r.Note, show.MS(a.Bwd)})
			continue
		}
		t.Rows = append(t.Rows, []string{r.Variant, show.MS(r.MedianMS), fmt.Sprintf("%.2f", r.GFLOPs/1e3), peakCell(r), show.Ratio(pt, r.MedianMS), verdictOf(r), show.MS(a.Bwd)})
	}
	if fb, ok := run.Find("fwdbwd", Torch, 0); ok && fb.MedianMS > 0 {
		t.Rows = append(t.Rows, []string{"PyTorch forward+backward", show.MS(fb.MedianMS), fmt.Sprintf("%.2f", fb.GFLOPs/1e3), peakCell(fb), "", "baseline", "94 + 529 ms"})
	}
	if fb, ok := run.Find("fwdbwd", TorchCompile, 0); ok {
		if fb.MedianMS > 0 {
			t.Rows = append(t.Rows, []string{"torch.compile forward+backward", show.MS(fb.MedianMS), fmt.Sprintf("%.2f", fb.GFLOPs/1e3), peakCell(fb), show.Ratio(run.Median("fwdbwd", Torch), fb.MedianMS) + " (of PyTorch's forward+backward)", "baseline", ""})
		} else {
			t.Rows = append(t.Rows, []string{"torch.compile forward+backward", "unavailable", "", "", "", fb.Note, ""})
		}
	}
	if len(t.Rows) == 0 {
		t.Rows = append(t.Rows, []string{"(no backward records in this run)", "", "", "", "", "", ""})
	}
	t.Caption = show.Sentences("PyTorch's backward alone is the median of forward+backward minus the median of forward (autograd runs both). Backward work: 2 x the forward's multiply-adds.",
		show.PeakNote(run.Receipt, recs))
	return t
}

// backwardMedian is the backward time of the article's step name: PyTorch's, or the backward
// ladder's step of the same name ("bwd " + step).
func backwardMedian(run *record.Run, step string) float64 {
	if v := run.Median("backward", step); v > 0 {
		return v
	}
	return run.Median("backward", "bwd "+step)
}

// ArticleTable is the article's own table as data: GTX 1070M and RTX 3090 numbers, and this run's.
func ArticleTable(run *record.Run) show.Table {
	t := show.Table{Title: "The article's table (ms, one profiled iteration each) and this run's medians",
		Header: []string{"step", "fwd 1070M", "bwd 1070M", "fwd 3090", "bwd 3090", "fwd here", "bwd here", "note"}}
	for _, a := range Article {
		var f3, b3 float64
		for _, r := range Article3090 {
			if r.Step == a.Step {
				f3, b3 = r.Fwd, r.Bwd
			}
		}
		t.Rows = append(t.Rows, []string{a.Step, show.MS(a.Fwd), show.MS(a.Bwd), show.MS(f3), show.MS(b3), show.MS(run.Median("forward", a.Step)), show.MS(backwardMedian(run, a.Step)), a.Note})
	}
	t.Caption = "Source: BlinkDL, RWKV-CUDA (timex_cuda_v0..v3). The article's speedups are over a weak baseline (a 768-tap grouped conv on a zero-padded input) and each time is a single iteration under the autograd profiler, with no warm-up and no spread."
	return t
}

// SweepTable is the forward time at every T of the sweep, one column per variant.
func SweepTable(run *record.Run) show.Table {
	variants := run.Variants("sweep")
	t := show.Table{Title: "Forward time against T (B=32, C=768)", Header: append([]string{"T"}, variants...)}
	for _, T := range SweepTs(false) {
		row := []string{strconv.Itoa(T)}
		found := false
		for _, v := range variants {
			if r, ok := run.Find("sweep", v, int64(T)); ok {
				row = append(row, show.MS(r.MedianMS))
				found = true
			} else {
				row = append(row, "—")
			}
		}
		if found {
			t.Rows = append(t.Rows, row)
		}
	}
	t.Caption = "Each kernel point checked on 64 random (b,c) rows against the float64 reference before it was timed."
	return t
}

// TileTable is v5 at the article's shape with 8, 16 and 32 outputs per lane: the measurement that
// chose its tile size.
func TileTable(run *record.Run) show.Table {
	recs := run.Select("tile")
	peakHeader, peakCell := show.PeakColumn(run.Receipt, recs)
	t := show.Table{Title: "v5: outputs per lane (register tile), measured at the article's shape",
		Header: []string{"outputs per lane", "median", "TFLOP/s", peakHeader, "check"}}
	for _, r := range recs {
		t.Rows = append(t.Rows, []string{fmt.Sprint(r.Size), show.MS(r.MedianMS), fmt.Sprintf("%.2f", r.GFLOPs/1e3), peakCell(r), verdictOf(r)})
	}
	if len(t.Rows) == 0 {
		t.Rows = append(t.Rows, []string{"(not in this run)", "", "", "", ""})
	}
	t.Caption = "More outputs per lane means fewer shared-memory loads per FMA but more registers (3 x tile per lane: accumulators and the two k windows) and more wasted products on the diagonal tiles."
	return t
}

// Tables are the lesson's tables from a run.
func Tables(run *record.Run) []show.Table {
	return []show.Table{ForwardTable(run), BackwardTable(run), ArticleTable(run), SweepTable(run), TileTable(run),
		show.Reports("Compile reports at the article's shape", shownReports(run))}
}

// Figures are the forward and backward bars, the speedups beside the article's, and the T sweep.
func Figures(run *record.Run) ([]lab.Figure, error) {
	var figs []lab.Figure
	var labels []string
	var times, speed, cspeed, artSpeed []float64
	var measured []record.Record
	pt, pc := run.Median("forward", Torch), run.Median("forward", TorchCompile)
	for _, r := range run.Select("forward") {
		if r.MedianMS <= 0 {
			continue // unavailable: its reason is in the tables
		}
		labels = append(labels, r.Variant)
		measured = append(measured, r)
		csp := 0.0
		if pc > 0 {
			csp = pc / r.MedianMS
		}
		cspeed = append(cspeed, csp)
		times = append(times, r.MedianMS)
		sp := 0.0
		if pt > 0 && r.MedianMS > 0 {
			sp = pt / r.MedianMS
		}
		speed = append(speed, sp)
		a, _ := articleRow(r.Variant)
		as := 0.0
		if a.Fwd > 0 {
			as = 94 / a.Fwd
		}
		artSpeed = append(artSpeed, as)
	}
	if len(labels) > 0 {
		p, err := charts.Bars("RWKV forward at B=32 C=768 T=768", "median time (ms)", labels, []charts.Series{{Name: "forward", Values: times}}, true, 0)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: "01_forward_time", Plot: p})
		series := []charts.Series{{Name: "over PyTorch eager", Values: speed}}
		if pc > 0 {
			series = append(series, charts.Series{Name: "over torch.compile", Values: cspeed})
		}
		series = append(series, charts.Series{Name: "article, over its PyTorch", Values: artSpeed})
		p, err = charts.Bars("Forward speedup over PyTorch and torch.compile: this run and the article (GTX 1070M)", "speedup (x)", labels, series, true, 1)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: "01_forward_speedup", Plot: p})
		p, err = lab.PeakBars("Forward: % of each step's peak (FP32 FMA, or TF32 tensor cores)", run.Receipt, measured, func(r record.Record) string { return r.Variant })
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: "01_forward_peak", Plot: p})
	}
	var bl []string
	var bt []float64
	for _, r := range run.Select("backward") {
		if r.MedianMS <= 0 {
			continue
		}
		bl = append(bl, r.Variant)
		bt = append(bt, r.MedianMS)
	}
	if len(bl) > 0 {
		p, err := charts.Bars("RWKV backward (dk and dw) at B=32 C=768 T=768", "median time (ms)", bl, []charts.Series{{Name: "backward", Values: bt}}, true, 0)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: "01_backward_time", Plot: p})
	}
	lines := lab.SweepLines(run.Select("sweep"), func(r record.Record) float64 { return r.MedianMS })
	if len(lines) > 0 {
		p, err := charts.Lines("Forward time against T (B=32, C=768)", "T", "median time (ms)", lines, true, true)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: "01_sweep", Plot: p})
	}
	return figs, nil
}

package trilinear

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/charts"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// Lesson is lesson 07 for the reproduce command.
var Lesson = lab.Lesson{ID: ID, Title: "Trilinear interpolation as a custom autograd op: coalescing, vectors, 16-bit storage, both gradients, a fused step",
	Run: Run, Tables: Tables, Figures: Figures, Exercises: Exercises, Steps: StepChecks}

// Variant names of the baselines in the records.
const (
	Eager    = "PyTorch eager"
	Compiled = "torch.compile"
	Separate = "steps 3+5+6, separately"
)

// The record cases of a run.
const (
	CaseSweepN = "sweep N"
	CaseSweepF = "sweep F"
	CaseGrad   = "gradcheck"
)

// SweepNs and SweepFs are the sweeps' sizes (F = 256 and N = 65536 respectively).
func SweepNs(quick bool) []int {
	if quick {
		return []int{4096, 65536}
	}
	return []int{1024, 4096, 16384, 65536, 131072}
}

// SweepFs are the F of the F sweep: 1 and 3 (the article's RGB case), odd sizes, multiples of 4 and 8.
func SweepFs(quick bool) []int {
	if quick {
		return []int{1, 3, 256}
	}
	return []int{1, 3, 4, 17, 64, 255, 256, 512}
}

// SweepSteps are the forward steps measured over the sweeps.
var SweepSteps = []string{"1 article", "2 coalesced", "3 float4"}

// CheckRows is how many random points' outputs Run compares with the reference at the article's shape.
func CheckRows(quick bool) int {
	if quick {
		return 1024
	}
	return 4096
}

func sweepShapes(quick bool) []Shape {
	var out []Shape
	for _, n := range SweepNs(quick) {
		if n != ArticleShape.N { // the article's shape is measured once, as a point of the F sweep
			out = append(out, Shape{N: n, F: ArticleShape.F})
		}
	}
	for _, f := range SweepFs(quick) {
		out = append(out, Shape{N: ArticleShape.N, F: f})
	}
	return out
}

// Run measures the lesson: the PyTorch baselines; every step at the article's shape (checked on
// NaN-poisoned outputs, then timed) with its compile report; the gradient checks of the CPU and GPU
// ops and the GPU op at the article's shape with points outside the cell; and the N and F sweeps.
func Run(env *lab.Env, quick bool) (*record.Run, error) {
	run := env.NewRun(ID)
	s := ArticleShape
	sweeps := sweepShapes(quick)
	prog := show.NewProgress("lesson 07", 4+len(Steps)+len(sweeps))
	defer prog.Done()
	run.Add(env.CopyRecord("forward"))
	addTorch(env, run, s, sweeps)
	prog.Step("PyTorch")

	refused := RefusedOn(env.Device())
	p, err := NewProblem(env, s, 42, -1, 1, CheckRows(quick), 0)
	if err != nil {
		return nil, err
	}
	for _, st := range Steps {
		if _, ok := refused[st.Name]; ok {
			prog.Step(st.Name)
			continue
		}
		rec, err := p.Measure(st, "", "")
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
	p.Free()
	addSeparate(env, run, s)

	if err := addGradChecks(env, run, quick); err != nil {
		return nil, err
	}
	prog.Step("gradient checks")

	for _, ss := range sweeps {
		if err := measureSweep(env, run, ss, refused); err != nil {
			return nil, err
		}
		prog.Step(ss.String())
	}
	for _, c := range (lab.Lesson{Steps: StepChecks}).StepsOn(env.Device()) {
		if !c.Runs() {
			run.Add(lab.RefusedRecord(c))
		}
	}
	return run, nil
}

func measureSweep(env *lab.Env, run *record.Run, s Shape, refused map[string]lab.StepCheck) error {
	p, err := NewProblem(env, s, uint64(1000+s.N+s.F), -1, 1, 64, 0)
	if err != nil {
		return err
	}
	defer p.Free()
	c, size := CaseSweepN, int64(s.N)
	if s.N == ArticleShape.N {
		c, size = CaseSweepF, int64(s.F)
	}
	for _, name := range SweepSteps {
		if _, ok := refused[name]; ok {
			continue
		}
		st, _ := StepByName(name)
		rec, err := p.Measure(st, "", "")
		if err != nil {
			return err
		}
		rec.Case, rec.Size = c, size
		run.Add(rec)
		if s == ArticleShape { // the article's shape is a point of both sweeps
			rec.Case, rec.Size = CaseSweepN, int64(s.N)
			run.Add(rec)
		}
	}
	return nil
}

// addSeparate adds the unfused training step's kernels as one derived record: the sum of the
// medians of steps 3, 5 and 6 (a lower bound: it leaves out the loss gradient's own kernel).
func addSeparate(env *lab.Env, run *record.Run, s Shape) {
	var ms float64
	for _, v := range []string{"3 float4", "5 backward feats", "6 backward points"} {
		r, ok := run.Find(caseOf(v), v, 0)
		if !ok || r.MedianMS <= 0 {
			return
		}
		ms += r.MedianMS
	}
	rec := record.Record{Case: string(KindTrain), Variant: Separate, Kind: "baseline", DType: "float32", Shape: s.String(), Size: int64(s.N),
		Note: "derived: sum of the medians of steps 3, 5 and 6 (the loss gradient r = out - target would be one more kernel)"}
	run.Add(env.WithTiming(rec, TrainWork(s), bench.Timing{Median: ms, Min: ms, Max: ms}))
}

func caseOf(step string) string {
	st, err := StepByName(step)
	if err != nil {
		return ""
	}
	return string(st.Kind)
}

// addGradChecks records the finite-difference checks of the CPU and GPU ops on GradCheckShapes and
// the GPU op's outputs and gradients at the article's shape (points in [-1.25, 1.25], so some are
// clamped) and at an awkward shape, against the references.
func addGradChecks(env *lab.Env, run *record.Run, quick bool) error {
	add := func(variant, shape string, ok bool, rel float64, note string) {
		run.Add(record.Record{Case: CaseGrad, Variant: variant, Kind: "reference", DType: "float32", Shape: shape, Correct: ok, RelL2: finite(rel), Note: note})
	}
	for i, s := range GradCheckShapes {
		c, err := GradCheckCPU(s, uint64(30+i))
		if err != nil {
			return err
		}
		add("CPU float64 op", s.String(), c.OK, c.MaxRelErr, c.String())
		g, err := GradCheckGPU(env, s, uint64(30+i), 0)
		if err != nil {
			return err
		}
		add("GPU op", s.String(), g.OK, g.MaxRelErr, g.String())
	}
	for _, s := range []Shape{ArticleShape, {N: 1000, F: 37}} {
		r, err := OpCheck(env, s, 77, -1.25, 1.25, CheckRows(quick))
		if err != nil {
			return err
		}
		add("GPU op vs references", s.String(), r.OK(), math.Max(r.Out.RelL2, math.Max(r.DFeats.RelL2, r.DPt.RelL2)), r.String())
	}
	return nil
}

// addTorch adds the PyTorch records; when PyTorch cannot run, one record says why.
func addTorch(env *lab.Env, run *record.Run, s Shape, sweeps []Shape) {
	base := record.Record{Case: "forward", Variant: Eager, Kind: "baseline", DType: "float32", Shape: s.String(), Size: int64(s.N),
		Note: "the article's trilinear_interpolation_py, eager"}
	tr, err := RunTorch(s, sweeps, env.Bench.Method)
	if err != nil {
		base.Note = "unavailable: " + err.Error()
		run.Add(base)
		return
	}
	run.Receipt.Torch = tr.Torch
	run.Add(env.WithTiming(base, ForwardWork(s, 4), tr.Forward.Bench()))
	c := base
	c.Variant, c.Note = Compiled, "torch.compile of the same function, timed after its first (compiling) call"
	if tr.CompiledError != "" {
		c.Note = "unavailable: " + tr.CompiledError
		run.Add(c)
	} else {
		run.Add(env.WithTiming(c, ForwardWork(s, 4), tr.Compiled.Bench()))
	}
	fb := base
	fb.Case, fb.Variant, fb.Note = string(KindBwdFeats), Eager+" forward+backward", "autograd: forward, then out.backward(g), feats only (the article's)"
	run.Add(env.WithTiming(fb, bench.Work{Bytes: ForwardWork(s, 4).Bytes + BackwardFeatsWork(s).Bytes}, tr.FwdBwd.Bench()))
	bw := base
	bw.Case, bw.Variant, bw.Note = string(KindBwdFeats), Eager+" backward", "derived: median of forward+backward minus median of forward"
	ms := tr.FwdBwd.MedianMS - tr.Forward.MedianMS
	run.Add(env.WithTiming(bw, BackwardFeatsWork(s), bench.Timing{Median: ms, Min: ms, Max: ms}))
	fp := base
	fp.Case, fp.Variant, fp.Note = string(KindBwdPoints), Eager+" forward+backward, feats and points", "autograd: forward, then out.backward(g) with both inputs requiring grad"
	run.Add(env.WithTiming(fp, bench.Work{Bytes: ForwardWork(s, 4).Bytes + BackwardFeatsWork(s).Bytes + BackwardPointsWork(s).Bytes}, tr.FwdBwdPoints.Bench()))
	tn := base
	tn.Case, tn.Variant, tn.Note = string(KindTrain), Eager+" training step", "0.5*((interp(feats, points) - target)**2).sum().backward(), both gradients"
	run.Add(env.WithTiming(tn, TrainWork(s), tr.Train.Bench()))
	for _, x := range sweeps {
		t, ok := tr.Sweep[fmt.Sprintf("%d,%d", x.N, x.F)]
		if !ok {
			continue
		}
		r := base
		r.Shape, r.Case, r.Size = x.String(), CaseSweepF, int64(x.F)
		if x.F == s.F && x.N != s.N {
			r.Case, r.Size = CaseSweepN, int64(x.N)
		}
		rec := env.WithTiming(r, ForwardWork(x, 4), t.Bench())
		run.Add(rec)
		if x == s {
			rec.Case, rec.Size = CaseSweepN, int64(x.N)
			run.Add(rec)
		}
	}
	xr := record.Record{Case: "crosscheck", Variant: Eager, Kind: "baseline", DType: "float32", Shape: XShape.String(),
		RelL2: finite(tr.Cross.RelL2), MaxAbs: tr.Cross.MaxAbs, Correct: tr.Cross.OK, Tol: tr.Cross.Tol.Name,
		Note: "PyTorch's forward on our inputs (passed through a file) against our float64 reference"}
	run.Add(xr)
}

// Article is the article's table (compute_86 consumer GPU): ONE wall-clock sample each, no warm-up,
// the CUDA path run first (it paid the first-call costs) - milliseconds.
var Article = struct{ CUDAFwd, TorchFwd, CUDABwd, TorchBwd float64 }{3.31, 4.14, 4.65, 46.1}

func verdictOf(r record.Record) string {
	switch {
	case r.Kind == "baseline" && r.Tol == "":
		return "baseline"
	case r.Correct:
		return fmt.Sprintf("pass, %s (rel L2 %.1e)", r.Tol, r.RelL2)
	}
	return fmt.Sprintf("FAIL (rel L2 %.1e)", r.RelL2)
}

// table is the common layout: time, spread, bandwidth and speedups over the named baselines.
func table(run *record.Run, title, caseName string, baselines []string, caption string) show.Table {
	t := show.Table{Title: title, Header: []string{"variant", "dtype", "median", "min .. max", "GB/s", "% copy BW"}}
	for _, b := range baselines {
		t.Header = append(t.Header, "vs "+b)
	}
	t.Header = append(t.Header, "check", "kernel / note")
	for _, r := range run.Select(caseName) {
		if r.MedianMS <= 0 {
			row := []string{r.Variant, r.DType, "unavailable", "", "", ""}
			for range baselines {
				row = append(row, "")
			}
			t.Rows = append(t.Rows, append(row, "", r.Note))
			continue
		}
		row := []string{r.Variant, r.DType, bench.FormatMS(r.MedianMS), bench.FormatMS(r.MinMS) + " .. " + bench.FormatMS(r.MaxMS),
			fmt.Sprintf("%.0f", r.GBps), show.Pct(r.PctBW)}
		for _, b := range baselines {
			row = append(row, show.Ratio(run.Median(caseName, b), r.MedianMS))
		}
		t.Rows = append(t.Rows, append(row, verdictOf(r), r.Note))
	}
	t.Caption = caption + " Medians of the suite's method (CUDA events, warm-up, L2 flushed before each run) in one process; speedups are ratios of medians of this run. " +
		"GB/s counts the minimum traffic (each input read once, each output written once). Measured: " + run.Receipt.String()
	return t
}

// ForwardTable is the forward at the article's shape: every step and baseline.
func ForwardTable(run *record.Run) show.Table {
	return table(run, "Forward at the article's shape (N=65536, F=256, feats 512 MiB)", "forward", []string{Eager, Compiled, "1 article"},
		"Minimum traffic: feats 32F + out 4F + points 12 bytes per point in float32 (18F + 12 for the 16-bit steps, whose % is of the same copy bandwidth).")
}

// BackwardTable is the gradients at the article's shape.
func BackwardTable(run *record.Run) show.Table {
	t := table(run, "Backward at the article's shape: dfeats (the article's) and dpoints (beyond it)", string(KindBwdFeats), []string{Eager + " backward"},
		"PyTorch's backward alone is the median of forward+backward minus the median of forward (autograd runs both).")
	p := table(run, "", string(KindBwdPoints), nil, "")
	t.Rows = append(t.Rows, p.Rows...)
	return t
}

// TrainTable is the fused training step beside the separate kernels and PyTorch's eager step.
func TrainTable(run *record.Run) show.Table {
	return table(run, "A training step (L = 1/2 sum (out - target)^2, both gradients) at the article's shape", string(KindTrain), []string{Eager + " training step", Separate},
		"The fused step reads feats once; separately, step 3 and step 6 each read it.")
}

// ArticleTable is the article's own numbers beside this run's.
func ArticleTable(run *record.Run) show.Table {
	t := show.Table{Title: "The article's table (compute_86 consumer GPU, one wall-clock sample each) and this run's medians",
		Header: []string{"", "article: CUDA", "article: PyTorch", "article: speedup", "here: article's kernel", "here: fastest step", "here: PyTorch eager", "here: speedup of the fastest"}}
	best := func(c string) float64 {
		b := 0.0
		for _, r := range run.Select(c) {
			if r.Kind == "kernel" && r.Correct && r.DType == "float32" && r.MedianMS > 0 && (b == 0 || r.MedianMS < b) {
				b = r.MedianMS
			}
		}
		return b
	}
	fe, fb := run.Median("forward", Eager), run.Median(string(KindBwdFeats), Eager+" backward")
	t.Rows = append(t.Rows, []string{"forward", show.MS(Article.CUDAFwd), show.MS(Article.TorchFwd), show.Ratio(Article.TorchFwd, Article.CUDAFwd),
		show.MS(run.Median("forward", "1 article")), show.MS(best("forward")), show.MS(fe), show.Ratio(fe, best("forward"))})
	t.Rows = append(t.Rows, []string{"backward (dfeats)", show.MS(Article.CUDABwd), show.MS(Article.TorchBwd), show.Ratio(Article.TorchBwd, Article.CUDABwd),
		"—", show.MS(best(string(KindBwdFeats))), show.MS(fb), show.Ratio(fb, best(string(KindBwdFeats)))})
	t.Caption = "The article timed each call once with time.time() around it and torch.cuda.synchronize(), with no warm-up: the CUDA extension ran first and paid the first-call costs " +
		"(context, allocator, caches), PyTorch's backward time included autograd's graph walk, and the article's backward kernel had no forward beside it. One sample has no spread. Ours are medians of 25 runs after warm-up with the L2 flushed."
	return t
}

// SweepTable is the forward time over one sweep, one column per variant.
func SweepTable(run *record.Run, caseName string) show.Table {
	variants, order := run.Variants(caseName), run.Sizes(caseName)
	what, fixed := "N", "F = 256"
	if caseName == CaseSweepF {
		what, fixed = "F", "N = 65536"
	}
	t := show.Table{Title: fmt.Sprintf("Forward time against %s (%s): median, and %% of the copy bandwidth", what, fixed), Header: append([]string{what}, variants...)}
	for _, n := range order {
		row := []string{fmt.Sprint(n)}
		for _, v := range variants {
			if r, ok := run.Find(caseName, v, n); ok && r.MedianMS > 0 {
				row = append(row, fmt.Sprintf("%s (%s)", show.MS(r.MedianMS), show.Pct(r.PctBW)))
			} else {
				row = append(row, "—")
			}
		}
		t.Rows = append(t.Rows, row)
	}
	t.Caption = "Each kernel point checked on 64 random points' outputs against the float64 reference before it was timed. Step 3 falls back to step 2's kernel where F % 4 != 0."
	return t
}

// GradTable lists the gradient checks of the run.
func GradTable(run *record.Run) show.Table {
	t := show.Table{Title: "Gradient checks: finite differences of sum(tanh(out)^2), and the GPU op against the float64 references",
		Header: []string{"what", "shape", "verdict", "detail"}}
	for _, r := range run.Select(CaseGrad) {
		v := "pass"
		if !r.Correct {
			v = "FAIL"
		}
		t.Rows = append(t.Rows, []string{r.Variant, r.Shape, v, r.Note})
	}
	t.Caption = "CPU: float64, h = 1e-6, atol 1e-5, rtol 1e-3 (torch.autograd.gradcheck's defaults). GPU: the loss runs through float32 kernels, h = 1e-2, atol and rtol 1e-2. Points inside (-0.9, 0.9), so no step crosses the clamp."
	return t
}

// Targets is the closing table: each target of the lesson, the figure measured, met or not.
func Targets(run *record.Run) show.Table {
	t := show.NewTargets("Targets (the article's shape)")
	add := t.Add
	var best record.Record
	for _, r := range run.Select("forward") {
		if r.Kind == "kernel" && r.Correct && r.DType == "float32" && r.MedianMS > 0 && (best.MedianMS == 0 || r.MedianMS < best.MedianMS) {
			best = r
		}
	}
	tc := run.Median("forward", Compiled)
	add("fastest float32 forward >= 85% of the copy bandwidth (minimum traffic)", fmt.Sprintf("%s: %s, %.0f GB/s = %s", best.Variant, show.MS(best.MedianMS), best.GBps, show.Pct(best.PctBW)), best.PctBW >= 85, best.MedianMS > 0)
	add("fastest float32 forward faster than torch.compile", fmt.Sprintf("%s vs torch.compile %s: %s", show.MS(best.MedianMS), show.MS(tc), show.Ratio(tc, best.MedianMS)), tc > 0 && best.MedianMS < tc, tc > 0 && best.MedianMS > 0)
	eb := run.Median(string(KindBwdFeats), Eager+" backward")
	fb, _ := run.Find(string(KindBwdFeats), "5 backward feats", 0)
	add("feats backward >= 10x faster than eager's backward", fmt.Sprintf("%s vs eager backward %s (forward+backward %s): %s", show.MS(fb.MedianMS), show.MS(eb), show.MS(run.Median(string(KindBwdFeats), Eager+" forward+backward")), show.Ratio(eb, fb.MedianMS)),
		fb.Correct && eb/fb.MedianMS >= 10, eb > 0 && fb.MedianMS > 0)
	gpuOK, n := true, 0
	for _, r := range run.Select(CaseGrad) {
		if r.Variant == "GPU op" {
			n++
			gpuOK = gpuOK && r.Correct
		}
	}
	bp, _ := run.Find(string(KindBwdPoints), "6 backward points", 0)
	add("points gradient correct to the gradient check", fmt.Sprintf("GPU op gradcheck on %d shapes (dfeats and dpoints, every element): %v; step 6 at the article's shape %s", n, map[bool]string{true: "pass", false: "FAIL"}[gpuOK], verdictOf(bp)),
		gpuOK && bp.Correct, n > 0)
	t.Caption = "Measured: " + run.Receipt.String()
	return t.Table
}

// Tables are the lesson's tables from a run.
func Tables(run *record.Run) []show.Table {
	return []show.Table{ForwardTable(run), BackwardTable(run), TrainTable(run), ArticleTable(run), SweepTable(run, CaseSweepN), SweepTable(run, CaseSweepF),
		GradTable(run), Targets(run), show.Reports("Compile reports at the article's shape", run.Kernels)}
}

// Figures are the forward time and bandwidth bars, the gradients' bars, and both sweeps.
func Figures(run *record.Run) ([]lab.Figure, error) {
	var figs []lab.Figure
	var labels []string
	var times, pct []float64
	for _, r := range run.Select("forward") {
		if r.MedianMS <= 0 {
			continue
		}
		labels = append(labels, r.Variant)
		times = append(times, r.MedianMS)
		pct = append(pct, r.PctBW)
	}
	if len(labels) > 0 {
		p, err := charts.Bars("Trilinear forward, N=65536 F=256", "median time (ms)", labels, []charts.Series{{Name: "forward", Values: times}}, true, 0)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: "07_forward_time", Plot: p})
		p, err = charts.Bars("Forward: % of the measured copy bandwidth (minimum traffic)", "% of copy bandwidth", labels, []charts.Series{{Name: "forward", Values: pct}}, false, 100)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: "07_forward_bandwidth", Plot: p})
	}
	var bl []string
	var bt []float64
	for _, c := range []string{string(KindBwdFeats), string(KindBwdPoints), string(KindTrain)} {
		for _, r := range run.Select(c) {
			if r.MedianMS > 0 {
				bl = append(bl, r.Variant)
				bt = append(bt, r.MedianMS)
			}
		}
	}
	if len(bl) > 0 {
		p, err := charts.Bars("Gradients and a training step, N=65536 F=256", "median time (ms)", bl, []charts.Series{{Name: "time", Values: bt}}, true, 0)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: "07_backward_time", Plot: p})
	}
	for _, c := range []struct{ name, caseName, x string }{{"07_sweep_n", CaseSweepN, "N (F = 256)"}, {"07_sweep_f", CaseSweepF, "F (N = 65536)"}} {
		lines := lab.SweepLines(run.Select(c.caseName), func(r record.Record) float64 { return r.PctBW })
		if len(lines) == 0 {
			continue
		}
		p, err := charts.Lines("Forward: % of the copy bandwidth against "+c.x, c.x, "% of copy bandwidth", lines, true, false)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: c.name, Plot: p})
	}
	return figs, nil
}

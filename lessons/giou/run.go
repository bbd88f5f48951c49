package giou

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/charts"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// Lesson is lesson 06 for the reproduce command.
var Lesson = lab.Lesson{ID: ID, Title: "A custom GIoU loss operator: one kernel per batch, 16-bit boxes, and the backward fused in",
	Run: Run, Tables: Tables, Figures: Figures, Exercises: Exercises, Steps: StepChecks}

// Variant names of the PyTorch baselines in the records (the article's three PyTorch variants, and ours).
const (
	Loop           = "PyTorch per-sample loop"
	Concat         = "PyTorch concatenated"
	Eager          = "PyTorch padded + mask"
	Compiled       = "torch.compile padded"
	TorchVision    = "torchvision generalized_box_iou_loss"
	EagerFwdBwd    = "PyTorch padded + mask, fwd+bwd"
	CompiledFwdBwd = "torch.compile padded, fwd+bwd"
	Ragged         = "ragged: one copy per image"
	Padded         = "padded: one copy"
)

// The record cases of a run besides the steps' kinds.
const (
	CaseH2D   = "h2d targets"
	CaseSweep = "sweep B"
	CaseGrad  = "gradcheck"
	CaseCross = "crosscheck"
)

// ArticleSeed is the seed of the batch every run measures (Generate(ArticleShape, ArticleSeed)).
const ArticleSeed = 42

// SweepBs are the batch sizes of the sweep (M = 256, the article's box distribution).
func SweepBs(quick bool) []int {
	if quick {
		return []int{64, 1024, 16384}
	}
	return []int{16, 64, 256, 1024, 4096, 16384, 65536}
}

// SweepSteps are the steps measured over the sweep.
var SweepSteps = []string{"1 article", "3 block mean", "5 fused fwd+bwd", "6 warp per image", "6 warp fwd+bwd"}

// Run measures the lesson on the article's workload (seed ArticleSeed): the PyTorch baselines and
// the targets' host-to-device copies; every step (checked on NaN-poisoned outputs against the float64
// reference, then timed) with its compile reports; the gradient checks of the CPU and GPU ops and the
// GPU op at the article's shape; and the sweep over B.
func Run(env *lab.Env, quick bool) (*record.Run, error) {
	run := env.NewRun(ID)
	bt := Generate(ArticleShape, ArticleSeed)
	sweep := SweepBs(quick)
	prog := show.NewProgress("lesson 06", 3+len(Steps)+len(sweep))
	defer prog.Done()
	loopReps := 5
	if quick {
		loopReps = 2
	}
	addTorch(env, run, bt, loopReps)
	prog.Step("PyTorch")

	refused := RefusedOn(env.Device())
	p, err := NewProblem(env, bt, 0)
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
		if reps, err := p.Reports(st, ""); err == nil {
			run.Kernels = append(run.Kernels, reps...)
		}
		prog.Step(st.Name)
	}
	p.Free()
	if err := addGradChecks(env, run, bt); err != nil {
		return nil, err
	}
	prog.Step("gradient checks")
	for _, b := range sweep {
		if err := measureSweep(env, run, b, refused); err != nil {
			return nil, err
		}
		prog.Step(fmt.Sprintf("B = %d", b))
	}
	for _, c := range (lab.Lesson{Steps: StepChecks}).StepsOn(env.Device()) {
		if !c.Runs() {
			run.Add(lab.RefusedRecord(c))
		}
	}
	return run, nil
}

func measureSweep(env *lab.Env, run *record.Run, b int, refused map[string]lab.StepCheck) error {
	bt := Generate(Shape{B: b, M: ArticleShape.M}, uint64(1000+b))
	p, err := NewProblem(env, bt, 0)
	if err != nil {
		return err
	}
	defer p.Free()
	for _, name := range SweepSteps {
		if _, ok := refused[name]; ok {
			continue
		}
		rec, err := p.Measure(mustStep(name), "", "")
		if err != nil {
			return err
		}
		rec.Case = CaseSweep
		run.Add(rec)
	}
	return nil
}

// addGradChecks records the finite-difference checks of the CPU and GPU ops on GradCheckShapes and
// the GPU op at the article's shape, aligned and misaligned.
func addGradChecks(env *lab.Env, run *record.Run, bt *Batch) error {
	add := func(variant, shape string, ok bool, rel float64, note string) {
		run.Add(record.Record{Case: CaseGrad, Variant: variant, Kind: "reference", DType: "float32", Shape: shape, Correct: ok, RelL2: finite(rel), Note: note})
	}
	for i, s := range GradCheckShapes {
		c, err := GradCheckCPU(s, uint64(30+i))
		if err != nil {
			return err
		}
		add("CPU float64 op", s.String(), c.OK, c.MaxRelErr, c.String())
		g, err := GradCheckGPU(env, s, uint64(30+i))
		if err != nil {
			return err
		}
		add("GPU op", s.String(), g.OK, g.MaxRelErr, g.String())
	}
	for _, off := range []int{0, 1} {
		r, err := OpCheck(env, bt, off)
		if err != nil {
			return err
		}
		what := "GPU op vs reference"
		if off == 1 {
			what += ", misaligned pred"
		}
		add(what, bt.Shape.String(), r.OK(), math.Max(r.Outcome.Loss.RelL2, r.Outcome.Grad.RelL2), r.String())
	}
	return nil
}

// addTorch adds the PyTorch records; when PyTorch cannot run, one record says why.
func addTorch(env *lab.Env, run *record.Run, bt *Batch, loopReps int) {
	s := bt.Shape
	base := record.Record{Case: string(KindForward), Kind: "baseline", DType: "float32", Shape: s.String(), Size: int64(s.B)}
	tr, err := RunTorch(bt, env.Bench.Method, loopReps)
	if err != nil {
		r := base
		r.Variant, r.Note = Eager, "unavailable: "+err.Error()
		run.Add(r)
		return
	}
	run.Receipt.Torch = tr.Torch
	w := mustStep("1 article").Work(bt)
	add := func(c, v, note string, t bench.Timing) {
		r := base
		r.Case, r.Variant, r.Note = c, v, note
		run.Add(env.WithTiming(r, w, t))
	}
	unavailable := func(c, v, why string) {
		r := base
		r.Case, r.Variant, r.Note = c, v, "unavailable: "+why
		run.Add(r)
	}
	fw := string(KindForward)
	add(fw, Loop, fmt.Sprintf("the article's loss_fn: one generalized_box_iou call per image (~%d launches), %d timed runs", 30*s.B, loopReps), tr.Loop.Bench())
	add(fw, Concat, "the article's loss_with_concat: valid boxes concatenated, one call", tr.Concat.Bench())
	add(fw, Eager, "the article's loss_with_padding: every slot computed, then masked", tr.Padded.Bench())
	if tr.CompiledError != "" {
		unavailable(fw, Compiled, tr.CompiledError)
	} else {
		add(fw, Compiled, "torch.compile(loss_with_padding), timed after its compiling first call", tr.Compiled.Bench())
	}
	if tr.TorchVisionError != "" {
		unavailable(fw, TorchVision, tr.TorchVisionError)
	} else {
		add(fw, TorchVision, "torchvision "+tr.TorchVisionVersion+" generalized_box_iou_loss(reduction='none') on the padded batch, masked mean", tr.TorchVision.Bench())
	}
	tw := mustStep("5 fused fwd+bwd").Work(bt)
	trn := string(KindTrain)
	r := base
	r.Case, r.Variant, r.Note = trn, EagerFwdBwd, "autograd: (1 - loss_with_padding(pred, target)).backward(), eager"
	run.Add(env.WithTiming(r, tw, tr.FwdBwd.Bench()))
	if tr.FwdBwdCompiledError != "" || tr.CompiledError != "" {
		unavailable(trn, CompiledFwdBwd, tr.FwdBwdCompiledError+tr.CompiledError)
	} else {
		r.Variant, r.Note = CompiledFwdBwd, "torch.compile(loss_with_padding) then .backward() (AOTAutograd compiles the backward too)"
		run.Add(env.WithTiming(r, tw, tr.FwdBwdCompiled.Bench()))
	}
	h := base
	h.Case, h.Variant = CaseH2D, Ragged
	h.Note = fmt.Sprintf("%d tensor.to('cuda') calls of one image's targets each, pageable memory", s.B)
	bytes := bench.Work{Bytes: float64(bt.Total()) * 16}
	run.Add(env.WithTiming(h, bytes, tr.H2DRagged.Bench()))
	h.Variant, h.Note = Padded, fmt.Sprintf("one tensor.to('cuda') of the (%d, %d, 4) padded targets, pageable memory", s.B, s.M)
	run.Add(env.WithTiming(h, bench.Work{Bytes: float64(bt.Slots()) * 16}, tr.H2DPadded.Bench()))
	cross := func(v string, res bool, rel float64, note string) {
		run.Add(record.Record{Case: CaseCross, Variant: v, Kind: "baseline", DType: "float32", Shape: s.String(), Correct: res, RelL2: finite(rel), Tol: LossTol.Name, Note: note})
	}
	want, _ := bt.Reference()
	cross(Eager, tr.Cross.OK, tr.Cross.RelL2, fmt.Sprintf("PyTorch's padded loss %.7g vs our float64 %.7g (loop %.7g, concatenated %.7g)", tr.Loss, want, tr.LossLoop, tr.LossConcat))
	cross(EagerFwdBwd, tr.CrossGrad.OK, tr.CrossGrad.RelL2, "PyTorch's dL/dpred vs our float64 gradient, per box: "+tr.CrossGrad.String())
	if tr.TorchVisionError == "" {
		c := compareLoss(tr.TorchVisionLoss, want)
		cross(TorchVision, c.OK, c.RelL2, fmt.Sprintf("torchvision's loss %.7g vs our float64 %.7g (its eps is 1e-7, ours 1e-5)", tr.TorchVisionLoss, want))
	}
}

// Article is the article's table (an NVIDIA L4, PyTorch 2.4): "calc loss" per training step from
// the PyTorch profiler's CPU total over 10 steps, in milliseconds, and its copy of the data.
var Article = struct {
	Loop, Concat, Padded, Fused, Skip float64
	CopyRagged, CopyPadded            float64
}{938.067, 25.405, 1.844, 0.628743, 0.623426, 28.816, 5.713}

// ArticleVariants pairs the article's rows with this run's variants.
var ArticleVariants = []struct {
	Name, Variant string
	MS            float64
}{
	{"per-sample loop", Loop, Article.Loop},
	{"concatenated", Concat, Article.Concat},
	{"padded + mask", Eager, Article.Padded},
	{"fused kernel", "1 article", Article.Fused},
	{"fused kernel, conditional skip", "2 article skip", Article.Skip},
}

func verdictOf(r record.Record) string {
	switch {
	case r.Kind == "baseline" && r.Tol == "":
		return "baseline"
	case r.Correct:
		return fmt.Sprintf("pass, %s (rel %.1e)", r.Tol, r.RelL2)
	}
	return fmt.Sprintf("FAIL (rel %.1e)", r.RelL2)
}

func table(run *record.Run, title, caseName string, baselines []string, caption string) show.Table {
	t := show.Table{Title: title, Header: []string{"variant", "dtype", "median", "min .. max"}}
	for _, b := range baselines {
		t.Header = append(t.Header, "vs "+b)
	}
	t.Header = append(t.Header, "check", "kernels / note")
	for _, r := range run.Select(caseName) {
		if r.MedianMS <= 0 {
			row := []string{r.Variant, r.DType, "unavailable", ""}
			for range baselines {
				row = append(row, "")
			}
			t.Rows = append(t.Rows, append(row, "", r.Note))
			continue
		}
		row := []string{r.Variant, r.DType, bench.FormatMS(r.MedianMS), bench.FormatMS(r.MinMS) + " .. " + bench.FormatMS(r.MaxMS)}
		for _, b := range baselines {
			row = append(row, show.Ratio(run.Median(caseName, b), r.MedianMS))
		}
		t.Rows = append(t.Rows, append(row, verdictOf(r), r.Note))
	}
	t.Caption = caption + " Medians of the suite's method (CUDA events, warm-up, L2 flushed before each run) in one process; speedups are ratios of medians of this run. Measured: " + run.Receipt.String()
	return t
}

// ForwardTable is the loss at the article's workload: every PyTorch variant and every step.
func ForwardTable(run *record.Run) show.Table {
	return table(run, "The loss at the article's workload (B=1024, M=256, about 1.9 boxes per image)", string(KindForward), []string{Eager, Compiled, "1 article"},
		"The article's kernel steps are timed end to end: the per-slot kernel and the second pass. The PyTorch variants run on the same batch (passed through a file); the loop and the concatenation include their Python work.")
}

// TrainTable is the loss and its gradient.
func TrainTable(run *record.Run) show.Table {
	return table(run, "Loss and gradient (forward + backward) at the article's workload", string(KindTrain), []string{EagerFwdBwd, CompiledFwdBwd},
		"PyTorch: autograd through the padded loss, eager and compiled; step 5: one kernel writes the loss and dL/dpred (B x M x 4, padded slots zeroed).")
}

// TransferTable is the targets' host-to-device copy, per image and padded.
func TransferTable(run *record.Run) show.Table {
	t := show.Table{Title: "Host-to-device copy of the targets: one copy per image against one padded copy", Header: []string{"variant", "median", "min .. max", "bytes", "note"}}
	bytes := map[string]float64{}
	for _, r := range run.Select(CaseH2D) {
		if r.MedianMS <= 0 {
			continue
		}
		bytes[r.Variant] = r.GBps * r.MedianMS * 1e6
		t.Rows = append(t.Rows, []string{r.Variant, bench.FormatMS(r.MedianMS), bench.FormatMS(r.MinMS) + " .. " + bench.FormatMS(r.MaxMS),
			gpuBytes(bytes[r.Variant]), r.Note})
	}
	t.Caption = fmt.Sprintf("The article's 'copy data' (%.1f vs %.1f ms per step) also held the batch's images; this is the targets alone, measured by PyTorch with CUDA events. "+
		"The padded copy moves %s the bytes, but as one transfer; the ragged list pays a call and a synchronising pageable copy per image. Measured: %s",
		Article.CopyRagged, Article.CopyPadded, show.Ratio(bytes[Padded], bytes[Ragged]), run.Receipt.String())
	return t
}

func gpuBytes(b float64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

// ArticleTable is the article's own numbers beside this run's.
func ArticleTable(run *record.Run) show.Table {
	t := show.Table{Title: "The article's table (NVIDIA L4, PyTorch 2.4, profiler CPU time per step) and this run's medians",
		Header: []string{"variant", "article", "article: vs loop", "here", "here: vs loop"}}
	loop := run.Median(string(KindForward), Loop)
	for _, a := range ArticleVariants {
		here := run.Median(string(KindForward), a.Variant)
		t.Rows = append(t.Rows, []string{a.Name, show.MS(a.MS), show.Ratio(Article.Loop, a.MS), show.MS(here), show.Ratio(loop, here)})
	}
	for _, v := range []string{"3 block mean", "4 bfloat16", "6 warp per image"} {
		here := run.Median(string(KindForward), v)
		t.Rows = append(t.Rows, []string{"ours: " + v, "—", "—", show.MS(here), show.Ratio(loop, here)})
	}
	for _, v := range []string{"5 fused fwd+bwd", "6 warp fwd+bwd"} {
		here := run.Median(string(KindTrain), v)
		t.Rows = append(t.Rows, []string{"ours: " + v + " (loss and gradient)", "not written", "—", show.MS(here), show.Ratio(loop, here)})
	}
	t.Caption = "The article's times are the PyTorch profiler's CPU total for 'calc loss' over 10 steps divided by 10, with a torch.cuda.synchronize() inside the measured block: they include Python and launch overhead, " +
		"and for the kernel variants the casts of pred (bfloat16) and targets (uint8) to float32 and three torch reductions after the kernel. Ours are CUDA-event medians on the same batch in one process; the article's kernel steps here use our one-kernel second pass instead of torch's three."
	return t
}

// GradTable lists the gradient checks and cross-checks of the run.
func GradTable(run *record.Run) show.Table {
	t := show.Table{Title: "Gradient checks (finite differences of loss^2) and cross-checks against PyTorch", Header: []string{"what", "shape", "verdict", "detail"}}
	for _, c := range []string{CaseGrad, CaseCross} {
		for _, r := range run.Select(c) {
			v := "pass"
			if !r.Correct {
				v = "FAIL"
			}
			t.Rows = append(t.Rows, []string{r.Variant, r.Shape, v, r.Note})
		}
	}
	t.Caption = "CPU: float64, h = 1e-6, atol 1e-5, rtol 1e-3 (torch.autograd.gradcheck's defaults), every element of pred (padded slots too). GPU: the loss runs through float32 kernels (the op's loss-only kernel for the perturbed losses, its fused kernel for the gradient), h = 1e-2, atol 1e-4, rtol 1e-2 " +
		"on boxes scaled to a few units, each coordinate at least 3h from a kink (a min/max tie, a width crossing 0)."
	return t
}

// Targets is the closing table: each target of the lesson, the figure measured, met or not.
func Targets(run *record.Run) show.Table {
	t := show.NewTargets("Targets (the article's workload)")
	add := t.Add
	fw := string(KindForward)
	f := best(run, fw)
	ce, ee := run.Median(fw, Compiled), run.Median(fw, Eager)
	add("fused forward <= 15 us (fastest float32 step)", fmt.Sprintf("%s: %s (torch.compile padded %s, eager %s: %s and %s faster)", f.Variant, show.MS(f.MedianMS), show.MS(ce), show.MS(ee),
		show.Ratio(ce, f.MedianMS), show.Ratio(ee, f.MedianMS)), f.Correct && f.MedianMS <= 0.015, f.MedianMS > 0)
	tr := string(KindTrain)
	s5 := best(run, tr)
	efb, cfb := run.Median(tr, EagerFwdBwd), run.Median(tr, CompiledFwdBwd)
	add("forward+backward >= 10x faster than eager padded fwd+bwd", fmt.Sprintf("%s: %s vs %s: %s", s5.Variant, show.MS(s5.MedianMS), show.MS(efb), show.Ratio(efb, s5.MedianMS)),
		s5.Correct && efb/s5.MedianMS >= 10, efb > 0 && s5.MedianMS > 0)
	add("forward+backward faster than torch.compile's", fmt.Sprintf("%s: %s vs %s: %s", s5.Variant, show.MS(s5.MedianMS), show.MS(cfb), show.Ratio(cfb, s5.MedianMS)),
		s5.Correct && s5.MedianMS < cfb, cfb > 0 && s5.MedianMS > 0)
	ok, n := true, 0
	for _, r := range run.Select(CaseGrad) {
		n++
		ok = ok && r.Correct
	}
	add("backward proven: finite differences (CPU and GPU op) and the op against the reference", fmt.Sprintf("%d checks, all %s", n, map[bool]string{true: "pass", false: "NOT passing"}[ok]), ok, n > 0)
	rg, rp := run.Median(CaseH2D, Ragged), run.Median(CaseH2D, Padded)
	add("ragged vs padded target copy measured (article: 28.8 vs 5.7 ms incl. images)", fmt.Sprintf("%s vs %s: padded %s faster", show.MS(rg), show.MS(rp), show.Ratio(rg, rp)), rg > 0 && rp > 0, rg > 0)
	t.Caption = "Measured: " + run.Receipt.String()
	return t.Table
}

// best is the fastest correct float32 kernel record of a case.
func best(run *record.Run, c string) record.Record {
	var b record.Record
	for _, r := range run.Select(c) {
		if r.Kind == "kernel" && r.Correct && r.DType == string(F32) && r.MedianMS > 0 && (b.MedianMS == 0 || r.MedianMS < b.MedianMS) {
			b = r
		}
	}
	return b
}

// SweepTable is the time over B for the sweep's steps.
func SweepTable(run *record.Run) show.Table {
	t := show.Table{Title: "Time against the batch size B (M = 256, the article's box counts)", Header: []string{"B"}}
	t.Header = append(t.Header, SweepSteps...)
	seen := map[int64]bool{}
	var order []int64
	for _, r := range run.Select(CaseSweep) {
		if !seen[r.Size] {
			seen[r.Size] = true
			order = append(order, r.Size)
		}
	}
	for _, b := range order {
		row := []string{fmt.Sprint(b)}
		for _, v := range SweepSteps {
			if r, ok := run.Find(CaseSweep, v, b); ok && r.MedianMS > 0 {
				row = append(row, show.MS(r.MedianMS))
			} else {
				row = append(row, "—")
			}
		}
		t.Rows = append(t.Rows, row)
	}
	t.Caption = "Each point checked against the float64 reference before it was timed."
	return t
}

// Tables are the lesson's tables from a run.
func Tables(run *record.Run) []show.Table {
	return []show.Table{ForwardTable(run), TrainTable(run), ArticleTable(run), TransferTable(run), SweepTable(run), GradTable(run), Targets(run),
		show.Reports("Compile reports at the article's workload", run.Kernels)}
}

func bars(run *record.Run, c string) ([]string, []float64) {
	var labels []string
	var ms []float64
	for _, r := range run.Select(c) {
		if r.MedianMS > 0 {
			labels = append(labels, r.Variant)
			ms = append(ms, r.MedianMS)
		}
	}
	return labels, ms
}

// Figures are the forward and forward+backward bars, the copies, and the sweep over B.
func Figures(run *record.Run) ([]lab.Figure, error) {
	var figs []lab.Figure
	for _, f := range []struct{ name, c, title string }{
		{"06_forward_time", string(KindForward), "GIoU loss, B=1024 M=256: median time (log scale)"},
		{"06_train_time", string(KindTrain), "Loss and gradient, B=1024 M=256: median time (log scale)"},
		{"06_h2d", CaseH2D, "Targets host-to-device: per image vs padded"},
	} {
		labels, ms := bars(run, f.c)
		if len(labels) == 0 {
			continue
		}
		p, err := charts.Bars(f.title, "median time (ms)", labels, []charts.Series{{Name: "time", Values: ms}}, true, 0)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: f.name, Plot: p})
	}
	lines := lab.SweepLines(run.Select(CaseSweep), func(r record.Record) float64 { return r.MedianMS * 1e3 })
	if len(lines) > 0 {
		p, err := charts.Lines("Time against the batch size (M = 256)", "B (images)", "median time (us)", lines, true, true)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: "06_sweep_b", Plot: p})
	}
	return figs, nil
}

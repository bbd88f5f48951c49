package conv

import (
	"fmt"
	"slices"
	"strings"

	"gonum.org/v1/plot"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/charts"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
	"github.com/cudalessons/cudalessons/helpers/torch"
)

// Lesson is lesson 05 for the reproduce command.
var Lesson = lab.Lesson{ID: ID, Title: "Convolution as implicit GEMM, and conv + ReLU + max pool fused (KernelBench, part 3)",
	Run: Run, Tables: Tables, Figures: Figures, Exercises: Exercises, Steps: StepChecks}

// RefusedOn are the steps d cannot run (Lesson.RefusedOn, without the initialisation cycle Run ->
// Lesson -> Run).
func RefusedOn(d gpu.DeviceInfo) map[string]lab.StepCheck {
	return lab.Lesson{Steps: StepChecks}.RefusedOn(d)
}

// refusedIn is the record of a step that runs on this GPU at the article's layer but is refused at
// another shape (the deep layer's shared memory on compute capability 8.6 and 8.9): no time, the
// reason in its note.
func refusedIn(caseName string, st Step, s Shape, err error) record.Record {
	return record.Record{Case: caseName, Variant: st.Name, Kind: "refused", DType: st.DType, Shape: s.Short(), Note: "refused on this GPU: " + err.Error()}
}

// The record cases of a run.
const (
	CaseAlexNet = "conv AlexNet-1"
	CaseDeep    = "conv 3x3 256"
	CaseFused   = "conv+ReLU+pool"
	CaseDemo    = "no-ReLU demonstration"
	CaseSweep   = "sweep batch"
	CaseCross   = "crosscheck"
)

// SweepNs are the batch sizes of the sweep over AlexNet's first layer.
func SweepNs(quick bool) []int {
	if quick {
		return []int{1, 100}
	}
	return []int{1, 4, 16, 64, 100, 256}
}

// SweepSteps are the steps measured over the batch sweep.
var SweepSteps = []string{"3 implicit GEMM", "5 cp.async TF32", "5 cp.async FP16"}

func sweepShape(n int) Shape { s := AlexNet; s.N = n; return s }

// Variant names of the baselines in the records.
const (
	CuDNN        = "cuDNN fp32 (TF32 off)"
	CuDNNTF32    = "cuDNN TF32"
	CuDNNBench   = "cuDNN fp32, benchmark=True"
	Eager        = "PyTorch eager (TF32 off)"
	Compiled     = "torch.compile (TF32 off)"
	EagerTF32    = "PyTorch eager, TF32 on"
	CompiledTF32 = "torch.compile, TF32 on"
)

// CheckCount is how many random outputs Run compares with the float64 reference at the lesson's
// shapes (every output is scanned for NaN).
func CheckCount(quick bool) int {
	if quick {
		return 1024
	}
	return 4096
}

// Run measures the lesson: the PyTorch baselines; every conv step at the article's layer and the
// deep layer and the fused steps at the article's layer (each checked on NaN-poisoned outputs, then
// timed) with their compile reports; and the atomicMax step without its ReLU, checked (it fails).
func Run(env *lab.Env, quick bool) (*record.Run, error) {
	run := env.NewRun(ID)
	d := env.Device()
	refused := RefusedOn(d)
	ns := SweepNs(quick)
	prog := show.NewProgress("lesson 05", 3+2*len(Steps)+len(ns))
	defer prog.Done()
	addTorch(env, run, ns)
	prog.Step("PyTorch")
	for _, c := range []struct {
		name  string
		shape Shape
	}{{CaseAlexNet, AlexNet}, {CaseDeep, Deep}} {
		p, err := NewProblem(env, c.shape, 42, CheckCount(quick))
		if err != nil {
			return nil, err
		}
		for _, st := range Steps {
			if st.Fused && c.shape != AlexNet {
				continue
			}
			if _, ok := refused[st.Name]; ok {
				prog.Step(st.Name)
				continue
			}
			cs := c.name
			if st.Fused {
				cs = CaseFused
			}
			if _, err := st.PlanFor(c.shape, d); lab.IsRefusal(err) {
				run.Add(refusedIn(cs, st, c.shape, err))
				prog.Step(st.Name)
				continue
			}
			rec, err := p.Measure(st, "", cs, "")
			if err != nil {
				p.Free()
				return nil, err
			}
			run.Add(rec)
			if c.shape == AlexNet {
				if rep, err := p.Report(st); err == nil {
					run.Kernels = append(run.Kernels, rep)
				}
			}
			prog.Step(st.Name)
		}
		if _, ok := refused["6 fused atomicMax"]; c.shape == AlexNet && !ok {
			res, _, err := p.Check(NoReLU, "")
			if err != nil {
				p.Free()
				return nil, err
			}
			note := "expected to FAIL: " + fmt.Sprint(res.Err())
			if res.OK {
				note = "passed on these inputs: no window was all negative"
			}
			run.Add(record.Record{Case: CaseDemo, Variant: NoReLU.Name, Kind: "demonstration", DType: TF32, Shape: AlexNet.Short(),
				RelL2: finite(res.RelL2), MaxAbs: res.MaxAbs, Correct: res.OK, Tol: res.Tol.Name, Note: note})
		}
		p.Free()
		prog.Step(c.name)
	}
	for _, n := range ns {
		p, err := NewProblem(env, sweepShape(n), uint64(60+n), 256)
		if err != nil {
			return nil, err
		}
		for _, name := range SweepSteps {
			st := MustStep(name)
			if _, ok := refused[name]; ok {
				continue
			}
			if _, err := st.PlanFor(sweepShape(n), d); lab.IsRefusal(err) {
				r := refusedIn(CaseSweep, st, sweepShape(n), err)
				r.Size = int64(n)
				run.Add(r)
				continue
			}
			rec, err := p.Measure(st, "", CaseSweep, "")
			if err != nil {
				p.Free()
				return nil, err
			}
			rec.Size = int64(n)
			run.Add(rec)
		}
		p.Free()
		prog.Step(fmt.Sprintf("batch %d", n))
	}
	for _, c := range (lab.Lesson{Steps: StepChecks}).StepsOn(d) {
		if !c.Runs() {
			run.Add(lab.RefusedRecord(c))
		}
	}
	return run, nil
}

// addTorch adds the PyTorch records; when PyTorch cannot run, one record per case says why.
func addTorch(env *lab.Env, run *record.Run, ns []int) {
	var sweep []Shape
	for _, n := range ns {
		sweep = append(sweep, sweepShape(n))
	}
	tr, err := RunTorch([]Shape{AlexNet, Deep}, AlexNet, sweep, env.Bench.Method)
	if err != nil {
		for _, c := range []string{CaseAlexNet, CaseDeep, CaseFused} {
			run.Add(record.Record{Case: c, Variant: CuDNN, Kind: "baseline", DType: F32, Note: "unavailable: " + err.Error()})
		}
		return
	}
	run.Receipt.Torch = tr.Torch
	for _, c := range []struct {
		name  string
		shape Shape
	}{{CaseAlexNet, AlexNet}, {CaseDeep, Deep}} {
		t, ok := tr.Shapes[key(c.shape)]
		if !ok {
			continue
		}
		add := func(caseName, variant, dtype, note string, w bench.Work, tm bench.Timing) {
			if tm.Median <= 0 {
				return
			}
			run.Add(env.WithTiming(record.Record{Case: caseName, Variant: variant, Kind: "baseline", DType: dtype, Shape: c.shape.Short(), Note: note}, w, tm))
		}
		w := Work(c.shape)
		add(c.name, CuDNN, F32, "torch conv2d, cudnn.allow_tf32 = False, cudnn.benchmark = False (PyTorch's default algorithm choice)", w, t.FP32.Bench())
		add(c.name, CuDNNTF32, TF32, "torch conv2d, cudnn.allow_tf32 = True (PyTorch's default for convolutions)", w, t.TF32.Bench())
		add(c.name, CuDNNBench, F32, "torch conv2d, TF32 off, cudnn.benchmark = True (cuDNN times its algorithms once and keeps the fastest)", w, t.FP32Benchmark.Bench())
		if c.shape != AlexNet {
			continue
		}
		fw := FusedWork(c.shape)
		add(CaseFused, Eager, F32, "the article's model: conv2d, relu, max_pool2d(3, 2), three kernels, TF32 off", fw, t.Eager.Bench())
		if t.CompiledError != "" {
			run.Add(record.Record{Case: CaseFused, Variant: Compiled, Kind: "baseline", DType: F32, Note: "unavailable: " + t.CompiledError})
		} else {
			add(CaseFused, Compiled, F32, "torch.compile of the same function (timed after its compiling first call), TF32 off", fw, t.Compiled.Bench())
		}
		add(CaseFused, EagerTF32, TF32, "the eager layer with cudnn.allow_tf32 = True: the same number format as steps 6 and 7", fw, t.EagerTF32.Bench())
		add(CaseFused, CompiledTF32, TF32, "torch.compile with TF32 on", fw, t.CompiledTF32.Bench())
	}
	for _, s := range sweep {
		t, ok := tr.Sweep[key(s)]
		if !ok {
			continue
		}
		for _, v := range []struct {
			name, dtype string
			tm          torch.Timing
		}{{CuDNN, F32, t.FP32}, {CuDNNTF32, TF32, t.TF32}} {
			if v.tm.MedianMS > 0 {
				run.Add(env.WithTiming(record.Record{Case: CaseSweep, Variant: v.name, Kind: "baseline", DType: v.dtype, Shape: s.Short(), Size: int64(s.N)}, Work(s), v.tm.Bench()))
			}
		}
	}
	for _, x := range []struct {
		name string
		res  check.Result
	}{{CuDNN, tr.Cross}, {CuDNNTF32, tr.CrossTF32}} {
		run.Add(record.Record{Case: CaseCross, Variant: x.name, Kind: "baseline", DType: map[bool]string{true: TF32, false: F32}[x.name == CuDNNTF32], Shape: XShape.Short(),
			RelL2: finite(x.res.RelL2), MaxAbs: x.res.MaxAbs, Correct: x.res.OK, Tol: x.res.Tol.Name,
			Note: "PyTorch's conv2d on our inputs (passed through a file) against our float64 reference: " + x.res.String()})
	}
}

// Article is the article's published figures (KernelBench on an L40S, the generated kernels' speed
// as a % of PyTorch's time; fp32 inputs, atol = rtol = 1e-2).
var Article = struct {
	ConvRefMS, ConvMS          float64 // the conv's PyTorch reference and the final generated kernel
	ConvPct, FusedPct, FusedTC float64 // % of PyTorch eager (conv; fused) and of torch.compile (fused)
	Trajectory                 []float64
}{1.41, 0.795, 179.9, 290.1, 189.0,
	[]float64{7.02, 7.54, 3.46, 3.67, 3.46, 1.91, 1.37, 1.38, 1.37, 1.36, 1.07, 1.21, 1.01, 0.795}}

// TrajectoryIdeas are the article's rounds, one line each (our summary of its list).
var TrajectoryIdeas = []string{
	"replace the ops with a CUDA kernel", "__ldg for the read-only tensors", "conv as an FP16 tensor-core GEMM",
	"double-buffered cp.async pipeline", "implicit GEMM, seeded with an existing GEMM kernel", "precompute the k-index decomposition in shared memory",
	"cache the N-dimension (pixel) indices in shared memory", "per-warp output buffers in shared memory", "cache the base input coordinates",
	"software-pipeline the B-fragment loads", "reuse the pixel decomposition for the output addresses", "drop the hi/lo split: plain FP16",
	"double-buffer both A and B with on-the-fly K indices", "half2 vectorised shared-memory writes",
}

func verdictOf(r record.Record) string {
	switch {
	case r.Kind == "baseline":
		return "baseline"
	case r.Correct:
		return fmt.Sprintf("pass, %s (rel L2 %.1e, max abs %.1e)", r.Tol, r.RelL2, r.MaxAbs)
	}
	return fmt.Sprintf("FAIL (rel L2 %.1e)", r.RelL2)
}

func table(run *record.Run, title, caseName string, baselines []string, caption string) show.Table {
	recs := run.Select(caseName)
	peakHeader, peakCell := show.PeakColumn(run.Receipt, recs)
	t := show.Table{Title: title, Header: []string{"variant", "format", "median", "min .. max", "TFLOP/s", peakHeader}}
	for _, b := range baselines {
		t.Header = append(t.Header, "vs "+b)
	}
	t.Header = append(t.Header, "check", "kernel / note")
	for _, r := range recs {
		if r.MedianMS <= 0 {
			what := "unavailable"
			if r.Kind == "refused" {
				what = "refused on this GPU"
			}
			row := []string{r.Variant, r.DType, what, "", "", ""}
			for range baselines {
				row = append(row, "")
			}
			t.Rows = append(t.Rows, append(row, "", r.Note))
			continue
		}
		row := []string{r.Variant, r.DType, bench.FormatMS(r.MedianMS), bench.FormatMS(r.MinMS) + " .. " + bench.FormatMS(r.MaxMS),
			fmt.Sprintf("%.1f", r.GFLOPs/1e3), peakCell(r)}
		for _, b := range baselines {
			row = append(row, show.Ratio(run.Median(caseName, b), r.MedianMS))
		}
		t.Rows = append(t.Rows, append(row, verdictOf(r), r.Note))
	}
	t.Caption = show.Sentences(caption, "Medians of the suite's method (CUDA events, warm-up, L2 flushed before each run) in one process; speedups are ratios of medians of this run. "+
		"TFLOP/s counts the useful work, 2 x C x R x R FLOPs per conv output.", show.PeakNote(run.Receipt, recs), "Measured: "+run.Receipt.String())
	return t
}

// ConvTable is one conv layer: every step and cuDNN.
func ConvTable(run *record.Run, caseName string) show.Table {
	title, cap := "AlexNet's first layer: "+AlexNet.String(), "The article's layer: 363 taps per output, 96 filters, 29M outputs (21.1 GFLOP)."
	if caseName == CaseDeep {
		title, cap = "A deep layer: "+Deep.String(), "2304 taps per output: the product is long, the gather per tap cheap, where implicit GEMM pays most."
	}
	return table(run, title, caseName, []string{CuDNN, CuDNNTF32}, cap)
}

// FusedTable is the fused layer: steps 6 and 7 beside the eager three kernels and torch.compile.
func FusedTable(run *record.Run) show.Table {
	return table(run, "Conv + bias + ReLU + MaxPool(3, 2), AlexNet's first block", CaseFused, []string{Eager, Compiled},
		"Steps 6 and 7 use TF32 tensor cores; the TF32-on rows of PyTorch use the same number format. The atomicMax step's time includes the memset of its output.")
}

// ArticleTable is the article's published figures beside this run's.
func ArticleTable(run *record.Run) show.Table {
	t := show.Table{Title: "The article's figures (L40S, KernelBench) and this run's", Header: []string{"", "article", "here"}}
	best := func(c string, tc bool) record.Record {
		var b record.Record
		for _, r := range run.Select(c) {
			if r.Kind == "kernel" && r.Correct && r.MedianMS > 0 && (r.DType != F32) == tc && (b.MedianMS == 0 || r.MedianMS < b.MedianMS) {
				b = r
			}
		}
		return b
	}
	cu := run.Median(CaseAlexNet, CuDNN)
	tc, f32 := best(CaseAlexNet, true), best(CaseAlexNet, false)
	fu := best(CaseFused, true)
	eg, cp := run.Median(CaseFused, Eager), run.Median(CaseFused, Compiled)
	pct := func(a, b float64) string {
		if a <= 0 || b <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.1f%%", 100*a/b)
	}
	kernel := func(r record.Record, steps []string) string {
		if r.MedianMS <= 0 && len(refusedSteps(run, steps...)) > 0 {
			return "refused on this GPU"
		}
		return fmt.Sprintf("%s, %s (rel L2 %.1e)", show.MS(r.MedianMS), r.Variant, r.RelL2)
	}
	fusedName := fu.Variant
	if fu.MedianMS <= 0 && len(refusedSteps(run, fusedSteps...)) > 0 {
		fusedName = "refused on this GPU"
	}
	t.Rows = [][]string{
		{"conv: PyTorch's time", show.MS(Article.ConvRefMS) + " (PyTorch's conv, fp32)", show.MS(cu) + " (" + CuDNN + ")"},
		{"conv: fastest kernel", fmt.Sprintf("%s, FP16 WMMA implicit GEMM", show.MS(Article.ConvMS)), kernel(tc, tcSteps)},
		{"conv: % of PyTorch (PyTorch time / kernel time)", fmt.Sprintf("%.1f%%", Article.ConvPct), pct(cu, tc.MedianMS)},
		{"conv: float32-exact kernel, % of PyTorch", "—", fmt.Sprintf("%s (%s)", pct(cu, f32.MedianMS), f32.Variant)},
		{"conv + ReLU + pool: % of eager", fmt.Sprintf("%.1f%%", Article.FusedPct), fmt.Sprintf("%s (%s)", pct(eg, fu.MedianMS), fusedName)},
		{"conv + ReLU + pool: % of torch.compile", fmt.Sprintf("%.1f%%", Article.FusedTC), pct(cp, fu.MedianMS)},
	}
	t.Caption = "The article judged correctness at atol = rtol = 1e-2 (so FP16 passed as 'fp32') and timed means of 100 runs; the percentages are PyTorch's time over the kernel's on an L40S. Here: medians with the L2 flushed, checks at the bounds of each format, on " + run.Receipt.Device.Name + "."
	return t
}

// TrajectoryTable lists the article's 14 rounds with their times.
func TrajectoryTable() show.Table {
	t := show.Table{Title: "The article's optimisation trajectory of the conv (L40S; PyTorch 1.41 ms)", Header: []string{"round", "ms", "% of PyTorch", "idea"}}
	for i, ms := range Article.Trajectory {
		t.Rows = append(t.Rows, []string{fmt.Sprint(i), fmt.Sprintf("%.3g", ms), fmt.Sprintf("%.1f%%", 100*Article.ConvRefMS/ms), TrajectoryIdeas[i]})
	}
	t.Caption = "Rounds 3 and 11 were slower than the round before: the search kept a round's idea in the prompt even when it did not pay. The big steps are the move to tensor cores (round 2), the precomputed index math (rounds 5, 6, 10) and the double buffering (12, 13)."
	return t
}

// The tensor-core conv steps and the fused steps: the ones a GPU below compute capability 8.0 refuses.
var (
	tcSteps    = []string{"4 tensor cores TF32", "4 tensor cores FP16", "5 cp.async TF32, 2 buffers", "5 cp.async TF32", "5 cp.async FP16"}
	fusedSteps = []string{"6 fused atomicMax", "7 fused tile pool"}
)

// refusedSteps are those of steps the run records as refused on its GPU.
func refusedSteps(run *record.Run, steps ...string) []string {
	var names []string
	for _, r := range lab.Refused(run) {
		if slices.Contains(steps, r.Variant) {
			names = append(names, r.Variant)
		}
	}
	return names
}

// Targets is the closing table: each target of the lesson, the figure measured, met or not.
func Targets(run *record.Run) show.Table {
	t := show.NewTargets("Targets (AlexNet's first layer)")
	add := t.Add
	best := func(c string, ok func(record.Record) bool) record.Record {
		var b record.Record
		for _, r := range run.Select(c) {
			if r.Kind == "kernel" && r.Correct && r.MedianMS > 0 && ok(r) && (b.MedianMS == 0 || r.MedianMS < b.MedianMS) {
				b = r
			}
		}
		return b
	}
	cu := run.Median(CaseAlexNet, CuDNN)
	// a target whose steps this GPU refuses says so rather than "not met"
	refusedAdd := func(target string, r record.Record, steps ...string) bool {
		if r.MedianMS > 0 {
			return false
		}
		names := refusedSteps(run, steps...)
		if len(names) == 0 {
			return false
		}
		add(target, "not measured: refused on this GPU ("+strings.Join(names, ", ")+")", false, false)
		return true
	}
	f := best(CaseAlexNet, func(r record.Record) bool { return r.DType == F32 })
	add("float32-exact conv >= 0.8x cuDNN float32", fmt.Sprintf("%s %s vs cuDNN %s: %s", f.Variant, show.MS(f.MedianMS), show.MS(cu), show.Ratio(cu, f.MedianMS)),
		cu > 0 && f.MedianMS > 0 && cu/f.MedianMS >= 0.8, cu > 0 && f.MedianMS > 0)
	tc := best(CaseAlexNet, func(r record.Record) bool { return r.DType != F32 })
	if !refusedAdd("a tensor-core conv >= 1.5x faster than cuDNN float32, error stated", tc, tcSteps...) {
		add("a tensor-core conv >= 1.5x faster than cuDNN float32, error stated", fmt.Sprintf("%s %s vs cuDNN %s: %s; rel L2 %.1e, max abs %.1e (%s bound)", tc.Variant, show.MS(tc.MedianMS), show.MS(cu), show.Ratio(cu, tc.MedianMS), tc.RelL2, tc.MaxAbs, tc.Tol),
			cu > 0 && tc.MedianMS > 0 && cu/tc.MedianMS >= 1.5, cu > 0 && tc.MedianMS > 0)
	}
	fu := best(CaseFused, func(record.Record) bool { return true })
	eg, cp := run.Median(CaseFused, Eager), run.Median(CaseFused, Compiled)
	if refusedAdd("fused conv+ReLU+pool >= 1.5x faster than the eager three", fu, fusedSteps...) {
		refusedAdd("fused conv+ReLU+pool faster than torch.compile", fu, fusedSteps...)
		t.Caption = "From this run's medians. The fused steps use TF32 tensor cores (their error is in the fused table). Measured: " + run.Receipt.String()
		return t.Table
	}
	add("fused conv+ReLU+pool >= 1.5x faster than the eager three", fmt.Sprintf("%s %s vs eager %s: %s", fu.Variant, show.MS(fu.MedianMS), show.MS(eg), show.Ratio(eg, fu.MedianMS)),
		eg > 0 && fu.MedianMS > 0 && eg/fu.MedianMS >= 1.5, eg > 0 && fu.MedianMS > 0)
	add("fused conv+ReLU+pool faster than torch.compile", fmt.Sprintf("%s vs torch.compile %s: %s", show.MS(fu.MedianMS), show.MS(cp), show.Ratio(cp, fu.MedianMS)),
		cp > 0 && fu.MedianMS > 0 && fu.MedianMS < cp, cp > 0 && fu.MedianMS > 0)
	t.Caption = "From this run's medians. The fused steps use TF32 tensor cores (their error is in the fused table). Measured: " + run.Receipt.String()
	return t.Table
}

// Tables are the lesson's tables from a run.
func Tables(run *record.Run) []show.Table {
	return []show.Table{ConvTable(run, CaseAlexNet), FusedTable(run), ConvTable(run, CaseDeep), SweepTable(run), CrossTable(run), ArticleTable(run), TrajectoryTable(), DemoTable(run), Targets(run),
		show.Reports("Compile reports at AlexNet's first layer", run.Kernels)}
}

// DemoTable is the atomicMax step without its ReLU, checked.
func DemoTable(run *record.Run) show.Table {
	t := show.Table{Title: "Integer atomicMax without the ReLU", Header: []string{"variant", "check", "detail"}}
	if len(refusedSteps(run, "6 fused atomicMax")) > 0 {
		t.Rows = append(t.Rows, []string{NoReLU.Name, "refused on this GPU", "step 6 (" + NoReLU.File + ") does not run here: see the refused steps"})
		t.Caption = "Step 6 compiled with -DNO_RELU and checked against the float64 max pool of the conv without ReLU."
		return t
	}
	for _, r := range run.Select(CaseDemo) {
		v := "FAIL (as it must)"
		if r.Correct {
			v = "pass"
		}
		t.Rows = append(t.Rows, []string{r.Variant, v, r.Note})
	}
	t.Caption = "Step 6 compiled with -DNO_RELU and checked against the float64 max pool of the conv without ReLU."
	return t
}

// Figures are the conv and fused bars, the deep layer's, and the article's trajectory beside the ladder.
func Figures(run *record.Run) ([]lab.Figure, error) {
	var figs []lab.Figure
	for _, c := range []struct{ name, caseName, title string }{
		{"05_conv_time", CaseAlexNet, "Conv, AlexNet's first layer (100 images)"},
		{"05_fused_time", CaseFused, "Conv + ReLU + MaxPool(3, 2), AlexNet's first block"},
		{"05_deep_time", CaseDeep, "Conv 3x3, 256 -> 256 at 56 x 56 (8 images)"},
	} {
		var labels []string
		var times []float64
		for _, r := range run.Select(c.caseName) {
			if r.MedianMS > 0 {
				labels = append(labels, r.Variant)
				times = append(times, r.MedianMS)
			}
		}
		if len(labels) == 0 {
			continue
		}
		p, err := charts.Bars(c.title, "median time (ms)", labels, []charts.Series{{Name: "time", Values: times}}, true, 0)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: c.name, Plot: p})
	}
	var labels []string
	var speed []float64
	cu := run.Median(CaseAlexNet, CuDNN)
	for _, c := range []string{CaseAlexNet, CaseDeep} {
		base := run.Median(c, CuDNN)
		for _, r := range run.Select(c) {
			if r.Kind == "kernel" && r.MedianMS > 0 && base > 0 {
				labels = append(labels, r.Variant+map[string]string{CaseAlexNet: " (AlexNet)", CaseDeep: " (3x3 256)"}[c])
				speed = append(speed, base/r.MedianMS)
			}
		}
	}
	if len(labels) > 0 && cu > 0 {
		p, err := charts.Bars("Speedup over cuDNN float32 (TF32 off), same layer, same run", "x cuDNN fp32", labels, []charts.Series{{Name: "speedup", Values: speed}}, true, 1)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: "05_speedup", Plot: p})
	}
	if lines := lab.SweepLines(run.Select(CaseSweep), func(r record.Record) float64 { return r.GFLOPs / 1e3 }); len(lines) > 0 {
		p, err := charts.Lines("AlexNet's first layer against the batch size", "batch N (images of 3x224x224)", "TFLOP/s (useful work)", lines, true, false)
		if err != nil {
			return nil, err
		}
		figs = append(figs, lab.Figure{Name: "05_sweep", Plot: p})
	}
	if p, err := TrajectoryPlot(run); err == nil && p != nil {
		figs = append(figs, lab.Figure{Name: "05_trajectory", Plot: p})
	} else if err != nil {
		return nil, err
	}
	return figs, nil
}

// TrajectoryPlot sets the article's 14 rounds (L40S) beside this run's ladder of conv steps at the
// same layer, with each side's PyTorch float32 reference as a flat line: time against round or step.
func TrajectoryPlot(run *record.Run) (*plot.Plot, error) {
	art := charts.Line{Name: "article's rounds 0-13 (L40S)"}
	for i, ms := range Article.Trajectory {
		art.X = append(art.X, float64(i))
		art.Y = append(art.Y, ms)
	}
	n := float64(len(Article.Trajectory) - 1)
	lines := []charts.Line{art, {Name: "article's PyTorch reference (L40S)", X: []float64{0, n}, Y: []float64{Article.ConvRefMS, Article.ConvRefMS}}}
	ours := charts.Line{Name: "this lesson's steps (" + run.Receipt.Device.Name + ")"}
	i := 0
	for _, r := range run.Select(CaseAlexNet) {
		if r.Kind == "kernel" && r.MedianMS > 0 {
			i++
			ours.X = append(ours.X, float64(i))
			ours.Y = append(ours.Y, r.MedianMS)
		}
	}
	if len(ours.X) > 0 {
		lines = append(lines, ours)
	}
	if cu := run.Median(CaseAlexNet, CuDNN); cu > 0 {
		lines = append(lines, charts.Line{Name: "cuDNN fp32 here", X: []float64{0, n}, Y: []float64{cu, cu}})
	}
	return charts.Lines("Conv, AlexNet's first layer: the article's trajectory and this ladder", "round (article) or step (here)", "time (ms)", lines, false, true)
}

// SweepTable is the batch sweep: each variant's time and TFLOP/s per batch size.
func SweepTable(run *record.Run) show.Table {
	variants, order := run.Variants(CaseSweep), run.Sizes(CaseSweep)
	t := show.Table{Title: "AlexNet's first layer against the batch size: median (TFLOP/s)", Header: append([]string{"N"}, variants...)}
	for _, n := range order {
		row := []string{fmt.Sprint(n)}
		for _, v := range variants {
			if r, ok := run.Find(CaseSweep, v, n); ok && r.MedianMS > 0 {
				row = append(row, fmt.Sprintf("%s (%.1f)", show.MS(r.MedianMS), r.GFLOPs/1e3))
			} else if ok && r.Kind == "refused" {
				row = append(row, "refused on this GPU")
			} else {
				row = append(row, "—")
			}
		}
		t.Rows = append(t.Rows, row)
	}
	t.Caption = "Each kernel point checked on 256 random outputs (and every output scanned for NaN) before it was timed. One image is 3025 pixel rows of the GEMM, 24 blocks of 128 pixels for 132 SMs: small batches leave the GPU mostly idle."
	return t
}

// CrossTable is PyTorch's conv on our inputs against our float64 reference: cuDNN's own error
// in float32 and with TF32, at the same bounds as the lesson's steps.
func CrossTable(run *record.Run) show.Table {
	t := show.Table{Title: "Cross-check: PyTorch's conv2d on the lesson's inputs against the float64 reference", Header: []string{"variant", "layer", "check", "rel L2", "max abs"}}
	for _, r := range run.Select(CaseCross) {
		v := "FAIL"
		if r.Correct {
			v = "pass, " + r.Tol
		}
		t.Rows = append(t.Rows, []string{r.Variant, r.Shape, v, fmt.Sprintf("%.1e", r.RelL2), fmt.Sprintf("%.1e", r.MaxAbs)})
	}
	t.Caption = "The same inputs as the lesson's check, passed to PyTorch through a file: cuDNN in float32 and with TF32 allowed, judged at the bounds the lesson's float32 and TF32 steps are judged at. " +
		"cuDNN picks its algorithm per layer: allowing TF32 lets it round, it does not make it round (compare the two errors here, and the two times at the full layer)."
	return t
}

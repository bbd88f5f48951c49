package matmul

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// The notebook's cells call these: each shows one thing and keeps the cell a line long.

// Intro shows the mode banner and the problem (shape, work, floors), proves the float64 reference on small shapes
// against the definition, and shows the tolerances with their derivation.
func Intro(env *lab.Env) error {
	show.Note(show.Info, env.Banner())
	s := Article
	peak := env.Receipt.PeakGFLOPS
	floor := func(gflops float64) string {
		if gflops <= 0 {
			return "unknown"
		}
		return bench.FormatMS(s.FLOPs() / (gflops * 1e9) * 1e3)
	}
	t := show.Table{Title: "The article's problem", Header: []string{"quantity", "value"}, Rows: [][]string{
		{"shape", "C (4096 x 4096) = A (4096 x 4096) · B (4096 x 4096), float32, row-major; inputs uniform in [-1, 1)"},
		{"work", fmt.Sprintf("%.0f G multiply-adds = %.1f GFLOP", s.FLOPs()/2e9, s.FLOPs()/1e9)},
		{"least DRAM traffic", fmt.Sprintf("%.0f MB (A and B read once, C written once): %.0f FLOP per byte, compute-bound on any GPU", s.Bytes()/1e6, s.Intensity())},
		{"FP32 FMA peak of " + deviceName(env), fmt.Sprintf("%.1f TFLOP/s: no CUDA-core kernel beats %s", peak/1e3, floor(peak))},
		{"tensor-core peaks (datasheet, dense)", tensorPeaks(env.Receipt, floor)},
		{"memory floor", fmt.Sprintf("%s at the measured copy bandwidth (%.0f GB/s)", floorBW(env, s), env.Receipt.CopyGBps)},
	}}
	t.Display()
	if err := ProveReference(Shape{M: 7, N: 5, K: 33}, 1); err != nil {
		return err
	}
	show.Note(show.Success, "The float64 reference equals the definition (a sum over k of A[i][k]·B[k][j], written as plainly as possible) on every element of 7x5x33, whether it runs by rows or by single elements.")
	ToleranceTable().Display()
	return nil
}

func floorBW(env *lab.Env, s Shape) string {
	if env.Receipt.CopyGBps <= 0 {
		return "unknown"
	}
	return bench.FormatMS(s.Bytes() / (env.Receipt.CopyGBps * 1e9) * 1e3)
}

// tensorPeaks says the datasheet tensor-core peaks of the receipt's GPU, each with the time it
// allows at 4096^3: the ceilings the TF32, fp16 and bf16 steps (and their splits, at a third) are
// measured against; a format the GPU lacks, or a GPU with no profile, is said.
func tensorPeaks(r record.Receipt, floor func(gflops float64) string) string {
	var parts []string
	for _, f := range []string{"tf32", "fp16", "bf16"} {
		p := r.PeakFor(f)
		if p.GFLOPS <= 0 {
			parts = append(parts, p.Missing)
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.1f TFLOP/s (%s)", strings.ToUpper(f), p.GFLOPS/1e3, floor(p.GFLOPS)))
	}
	return strings.Join(parts, ", ") + "; a split does three products per useful one: its ceiling is a third"
}

func deviceName(env *lab.Env) string {
	if env.Receipt.Device.Name != "" {
		return env.Receipt.Device.Name
	}
	return "the recorded GPU"
}

// ProveReference checks Reference against the definition on every element of s (full rows and
// single elements both), to 1e-12.
func ProveReference(s Shape, seed uint64) error {
	a, b := Inputs(s, seed)
	all := SampleOf(s, 0, 0, 0, seed)
	got := Reference(s, a, b, all.Idx)
	one := min(s.N+1, s.M*s.N-1) // element (1, 1), or the last one
	single := Reference(s, a, b, []int{one})
	for i := 0; i < s.M; i++ {
		for j := 0; j < s.N; j++ {
			var sum float64
			for k := 0; k < s.K; k++ {
				sum += float64(a[i*s.K+k]) * float64(b[k*s.N+j])
			}
			if math.Abs(got[i*s.N+j]-sum) > 1e-12 {
				return fmt.Errorf("matmul reference %v: element (%d, %d) is %.15g, the definition gives %.15g", s, i, j, got[i*s.N+j], sum)
			}
			if i*s.N+j == one && math.Abs(single[0]-sum) > 1e-12 {
				return fmt.Errorf("matmul reference %v: element (%d, %d) alone is %.15g, the definition gives %.15g", s, i, j, single[0], sum)
			}
		}
	}
	return nil
}

// ToleranceTable shows each precision's check at K = 4096 and the rounding model behind it.
func ToleranceTable() show.Table {
	t := show.Table{Title: "The checks at K = 4096: the suite's tolerance per precision, with the absolute term from the rounding model",
		Header: []string{"products", "expected rel L2 (model)", "bound: rel L2", "bound: per element", "why"}}
	for _, d := range []string{"float32", "tf32", "3xtf32", "fp16x3", "bf16x3"} {
		tol := Tolerance(d, Article.K)
		_, rel := ErrorModel(d, Article.K)
		t.Rows = append(t.Rows, []string{d, fmt.Sprintf("%.1e", rel), fmt.Sprintf("%.1e", tol.RelL2), fmt.Sprintf("%.1e + %.1e |c|", tol.Abs, tol.Rel), tol.Why})
	}
	t.Caption = "Inputs uniform in [-1, 1): an output is a sum of 4096 signed products, |c| about 21. The model adds the input rounding of the format (one rounding per input, or the residual of a hi + lo split) " +
		"and the float32 accumulation (rounding on CUDA cores, truncation on tensor cores) over the longest chain of additions."
	return t
}

// Overview measures the whole lesson on this GPU (or reuses the run an earlier cell or the
// reproduce command kept here), or in the no-GPU mode loads the recorded run, and shows the ladder
// and the article's result.
func Overview(env *lab.Env) error {
	run, err := env.Last(Lesson, false)
	if err != nil {
		if !env.GPU() {
			show.Note(show.Info, "No recorded GPU run of this lesson is available yet ("+err.Error()+").")
			return nil
		}
		return err
	}
	if !env.GPU() {
		show.Note(show.Info, "Recorded results: "+run.Receipt.String())
	} else {
		show.Note(show.Info, "Measured on this GPU: "+run.Receipt.String())
	}
	LadderTable(run).Display()
	ArticleTable(run).Display()
	if t, ok := lab.RefusedTable(run); ok {
		t.Display()
	}
	return nil
}

// Walk shows one step: its source with line numbers, its compile report at 4096^3, and its line of
// the run.
func Walk(env *lab.Env, step string) error {
	st, err := StepByName(step)
	if err != nil {
		return err
	}
	src, err := st.Source("")
	if err != nil {
		return err
	}
	if err := lab.ShowChange(ID, Steps, func(s Step) string { return s.Name }, func(s Step) (compile.Source, error) { return s.Source("") }, st.Name); err != nil {
		return err
	}
	if err := Refusal(st, env.Device()); err != nil {
		return err
	}
	if depth := st.DepthNote(env.Device()); depth != "" {
		show.Note(show.Info, "On "+deviceName(env)+": "+depth+".")
	}
	run, rerr := env.Shown(Lesson)
	var rep record.KernelReport
	found := false
	if run != nil && st.StagesOn(env.Device()) == MaxStages { // the recorded report is of the default depth
		for _, k := range run.Kernels {
			if k.Kernel == st.Kernel && (len(st.Defines) == 0) == !strings.Contains(k.Source, "[") {
				rep, found = k, true
			}
		}
	}
	if !found {
		if rep, err = CompileReport(env, st); err != nil {
			return err
		}
	}
	show.Reports("compile report of "+st.Kernel+" at 4096^3", []record.KernelReport{rep}).Display()
	env.ShowSASSCollapsed(src, st.OptionsOn(env.Arch(), env.Device()))
	if rerr != nil {
		if errors.Is(rerr, lab.ErrNoRecord) {
			return nil
		}
		return rerr
	}
	r, ok := run.Find("matmul", st.Name, 0)
	if !ok {
		show.Note(show.Warning, st.Name+" is not in this run.")
		return nil
	}
	parts := []string{fmt.Sprintf("%s: %s (min %s, max %s), %s TFLOP/s = %s; %s",
		st.Name, show.MS(r.MedianMS), show.MS(r.MinMS), show.MS(r.MaxMS), tflops(r), show.PeakShare(run.Receipt, r), Verdict(r))}
	if b := run.Median("matmul", TorchFP32); b > 0 {
		parts = append(parts, fmt.Sprintf("%s the speed of cuBLAS fp32 (%s)", show.Times(b/r.MedianMS), show.MS(b)))
	}
	if n := run.Median("matmul", Steps[0].Name); n > 0 {
		parts = append(parts, fmt.Sprintf("%s faster than the naive step", show.Times(n/r.MedianMS)))
	}
	kind := show.Success
	if !r.Correct {
		kind = show.Failure
	}
	show.Note(kind, strings.Join(parts, "; ")+". Device: "+r.Device+", "+r.Date+".")
	return nil
}

// Try compiles code in place of a step's file (same kernel name and parameters), shows its compile
// report, and in the GPU mode checks it on a NaN-poisoned output against float64 at 4096^3 (every
// output of a small shape first) and times it beside the original step in the same run. It is how
// a reader edits any step in the notebook and reruns it.
func Try(env *lab.Env, step, code string) (err error) {
	st, err := StepByName(step)
	if err != nil {
		return err
	}
	if err := Refusal(st, env.Device()); err != nil {
		return err
	}
	original := ""
	if src, err := st.Source(""); err == nil {
		original = src.Code
	}
	code, invite := lab.ReaderCode(code, original)
	defer lab.InviteAfter(invite, st.Name, &err)
	var prog *lab.Program
	if err := env.AsReader(func() (err error) { prog, err = build(env, st, code); return err }); err != nil {
		return err
	}
	cfg, err := st.Plan(Article, env.Device())
	if err != nil {
		return err
	}
	show.Reports("compile report", []record.KernelReport{prog.Report(st.Kernel, cfg.Block.Count(), cfg.SharedBytes)}).Display()
	if !env.GPU() {
		if rec, err := env.Recorded(ID); err == nil {
			if r, ok := rec.Find("matmul", st.Name, 0); ok {
				show.Records("recorded "+st.Name, []record.Record{r}, rec.Receipt).Display()
			}
		}
		show.Note(show.Info, "The kernel compiled. Checking and timing it needs a GPU; the recorded numbers of the original step are above.")
		return nil
	}
	small := Shape{M: 256, N: 384, K: 96}
	if st.Validate(small, env.Session.Device) == nil {
		sp, err := NewCheckedProblem(env, small, 21)
		if err != nil {
			return err
		}
		var res check.Result
		err = env.Guarded(st.Name, 0, func() (err error) { res, err = sp.Check(st, code); return err })
		if lab.ShowFault(st.Name, err, "") {
			return nil // the context is lost: nothing more runs here, not even the free
		}
		sp.Free()
		if err != nil {
			return err
		}
		if !res.OK {
			show.Note(show.Failure, fmt.Sprintf("Your %s is wrong on %v (every output checked): %v", st.Name, small, res.Err()))
			return nil
		}
		show.Note(show.Success, fmt.Sprintf("%v, every output: %s", small, res))
	}
	p, err := NewCheckedProblem(env, Article, 22)
	if err != nil {
		return err
	}
	defer p.Free()
	orig, err := p.Measure("try", st, "")
	if err != nil {
		return err
	}
	if code == "" { // the step as it is: no comparison with itself
		show.Records(fmt.Sprintf("%s at %v", st.Name, Article), []record.Record{orig}, env.Receipt).Display()
		return nil
	}
	var mine record.Record
	err = env.Guarded(st.Name, orig.MedianMS, func() (err error) { mine, err = p.Measure("try", st, code); return err })
	mine.Variant = st.Name + " (this cell)"
	if lab.ShowFault(st.Name, err, "") {
		return nil
	}
	if err != nil {
		show.Note(show.Failure, err.Error())
		return nil
	}
	show.Records(fmt.Sprintf("%s at %v", st.Name, Article), []record.Record{orig, mine}, env.Receipt, st.Name).Display()
	return nil
}

// Limits shows, without a GPU, which step takes which shape and why the others refuse, and the
// bad inputs every entry point refuses before any launch.
func Limits(env *lab.Env) error {
	shapes := []Shape{Article, NonSquare, {M: 4096, N: 4096, K: 4100}, {M: 1, N: 1, K: 1}}
	t := show.Table{Title: "Which step takes which shape (each plan decides before any launch)", Header: []string{"step"}}
	for _, s := range shapes {
		t.Header = append(t.Header, s.String())
	}
	for _, st := range append(append([]Step{}, Steps...), AnyShape, ThinK) {
		row := []string{st.Name}
		for _, s := range shapes {
			if err := st.Validate(s, env.Device()); err != nil {
				row = append(row, "refuses: "+strings.TrimPrefix(err.Error(), "matmul "+st.Name+": "))
			} else {
				row = append(row, "takes it")
			}
		}
		t.Rows = append(t.Rows, row)
	}
	t.Caption = "Multiply (the entry point for any shape) picks the last step that takes the shape, skipping TF32 (not float32-accurate), with the splits on rows of A and columns of B moved by powers of two into the window where they keep 22 bits (a float32 step for Inf or NaN, or for rows and columns whose magnitudes span too many binades: matmul.Choose says which and why); when no step of the ladder does, 7c thin K on a product less than 8 deep (every GPU), else 7b any shape (step 7 with zero-filled loads past the edges and masked stores, smaller tiles and split K where the GPU would sit idle; compute capability 8.0 and newer), and on older GPUs the shared-memory step, which takes every shape."
	t.Display()
	var bad []string
	if _, err := ShapeOf(64, 32, 31, 64); err != nil {
		bad = append(bad, err.Error())
	}
	if err := (Shape{M: 0, N: 8, K: 8}).Validate(); err != nil {
		bad = append(bad, err.Error())
	}
	if err := (Shape{M: 50000, N: 50000, K: 8}).Validate(); err != nil {
		bad = append(bad, err.Error())
	}
	if err := checkFits(Shape{M: 40000, N: 40000, K: 40000}, true, 16<<30, 16<<30, "a 16 GiB GPU"); err != nil {
		bad = append(bad, err.Error())
	}
	for _, b := range bad {
		show.Note(show.Info, "Refused before any launch: "+b)
	}
	return nil
}

// Banks shows the bank-conflict count of the steps' shared-memory accesses and, from the run, the
// time of step 6 with and without its padding.
func Banks(env *lab.Env) error {
	BankTable().Display()
	run, err := env.ShownOrNil(Lesson)
	if run == nil {
		return err
	}
	pad, nopad := run.Median("matmul", "6 vectorized"), run.Median("variant", "6 vectorized, no padding")
	if pad > 0 && nopad > 0 {
		show.Note(show.Info, fmt.Sprintf("Measured: step 6 with padding %s, without %s (%s).", show.MS(pad), show.MS(nopad), show.Ratio(nopad, pad)))
	}
	return nil
}

// Accuracy shows the split steps' error beside cuBLAS's and the variants.
func Accuracy(env *lab.Env) error {
	return env.ShowRun(Lesson, func(run *record.Run) []show.Table {
		return []show.Table{AccuracyTable(run), VariantTable(run)}
	}, "03_error")
}

// ShowKernelBench shows the KernelBench trials and fast_p.
func ShowKernelBench(env *lab.Env) error {
	run, err := env.ShownOrNil(Lesson)
	if run == nil {
		return err
	}
	KernelBenchTable(run).Display()
	FastPTable(run).Display()
	return nil
}

// Charts shows the time, throughput, roofline and sweep figures, the sweep table and the awkward
// shapes beside cuBLAS.
func Charts(env *lab.Env) error {
	run, err := env.ShownOrNil(Lesson)
	if run == nil {
		return err
	}
	if err := Lesson.ShowFigures(run, "03_time", "03_tflops", "03_roofline", "03_sweep"); err != nil {
		return err
	}
	SweepTable(run).Display()
	NonSquareTable(run).Display()
	return nil
}

// Reports shows every compile report of the run.
func Reports(env *lab.Env) error {
	return env.ShowTable(Lesson, func(run *record.Run) show.Table {
		return show.Reports("Compile reports at 4096^3", shownReports(run))
	})
}

// ShowTargets shows the targets table of the run.
func ShowTargets(env *lab.Env) error {
	return env.ShowTable(Lesson, Targets)
}

// checkFits is CheckMemory's rule: the bytes a product needs against the free memory.
func checkFits(s Shape, split bool, free, total int64, device string) error {
	if need := DeviceBytes(s, split); need > free {
		return fmt.Errorf("matmul %v: needs %s of device memory (A, B, C%s), over the %s free of %s on %s",
			s, gpu.FormatBytes(need), map[bool]string{true: " and the 16-bit halves", false: ""}[split],
			gpu.FormatBytes(free), gpu.FormatBytes(total), device)
	}
	return nil
}

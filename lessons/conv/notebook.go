package conv

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
	kc "github.com/cudalessons/cudalessons/kernels/conv"
)

// The notebook's cells call these: each shows one thing and keeps the cell a line long.

// Intro shows the two layers (work, bytes, the im2col matrix the implicit GEMM never builds),
// compiles every kernel file, and proves the float64 reference against an independent im2col
// formulation and the pool reference on small awkward layers.
func Intro(env *lab.Env) error {
	row := func(s Shape) []string {
		w := Work(s)
		im2col := float64(s.N*s.OH()*s.OW()) * float64(s.Taps()) * 4
		return []string{s.String(), fmt.Sprintf("%d x %d (pool %d x %d)", s.OH(), s.OW(), s.PH(), s.PW()), fmt.Sprint(s.Taps()),
			fmt.Sprintf("%.1f", w.FLOPs/1e9), fmt.Sprintf("%.0f MB", w.Bytes/1e6), fmt.Sprintf("%.0f MB", im2col/1e6), fmt.Sprintf("%.0f", w.FLOPs/w.Bytes)}
	}
	show.Table{Title: "The lesson's layers", Header: []string{"layer", "output", "taps C*R*R", "GFLOP", "minimum traffic", "im2col matrix (never built)", "FLOP per byte"},
		Rows:    [][]string{row(AlexNet), row(Deep)},
		Caption: "GEMM view: M = N*OH*OW output pixels, N = K filters, K = C*R*R taps. Both layers do far more arithmetic per byte than the GPU's balance point (about 20 FLOP per byte on an H100 for FP32): they are compute-bound, and the tensor cores are the lever."}.Display()
	if err := env.CompileFiles(kc.Kernels, kc.Files(), nil); err != nil {
		return err
	}
	for i, s := range []Shape{{N: 2, C: 3, H: 7, W: 9, K: 5, R: 3, S: 2, P: 1}, {N: 1, C: 3, H: 23, W: 19, K: 4, R: 11, S: 4, P: 2}} {
		in := NewInputs(s, uint64(i))
		a, b := Conv(s, in), Im2colConv(s, in)
		res := check.Compare(a, b, check.FP64)
		show.Note(show.Outcome(res.OK), fmt.Sprintf("float64 reference (the definition's loops) against an explicit im2col matrix product, %v: %v", s.Short(), res))
	}
	for _, bad := range []Shape{{N: 1, C: 3, H: 5, W: 5, K: 4, R: 11, S: 1, P: 2}, {N: 1, C: 3, H: 8, W: 8, K: 4, R: 3, S: 0, P: 1}} {
		_, err := Steps[0].PlanFor(bad, env.Receipt.Device)
		show.Note(show.Info, "refused before any launch: "+fmt.Sprint(err))
	}
	deep := Shape{N: 1, C: 512, H: 8, W: 8, K: 8, R: 3, S: 1, P: 1}
	_, err := MustStep("5 cp.async TF32").PlanFor(deep, env.Receipt.Device)
	show.Note(show.Info, "refused before any launch: "+fmt.Sprint(err))
	return nil
}

// Overview shows the lesson's run (kept on this GPU by an earlier cell, measured now when there is
// none, or the recorded one without a GPU): the article's layer, the article's figures and the
// time chart.
func Overview(env *lab.Env) error {
	run, err := env.ShownOrNil(Lesson)
	if run == nil {
		return err
	}
	run = AtShapesOn(run, env.Device())
	show.Note(show.Info, "Run shown: "+run.Receipt.String())
	ConvTable(run, CaseAlexNet).Display()
	ArticleTable(run).Display()
	if len(run.Select(CaseCross)) > 0 {
		CrossTable(run).Display()
	}
	return Lesson.ShowFigures(run, "05_conv_time", "05_speedup")
}

// ShowSource shows one kernel file with line numbers.
func ShowSource(file string) error { return lab.ShowSource(kc.Kernels, file) }

// caseOf is the record case of a step at the article's layer.
func caseOf(st Step) string {
	if st.Fused {
		return CaseFused
	}
	return CaseAlexNet
}

// trySmall is the awkward layer every edited step is also checked on (every output).
var trySmall = Shape{N: 3, C: 5, H: 13, W: 11, K: 97, R: 5, S: 3, P: 2}

// Trial is a step as the notebook lets a reader edit it (lab.Trial): code in place of the step's
// file (same kernel name and parameters), checked on NaN-poisoned outputs against the float64
// reference on an awkward layer (every output) and on the article's layer (sampled outputs), then
// timed there beside the original step.
func Trial(env *lab.Env, step string) (lab.Trial, error) {
	st, err := StepByName(step)
	if err != nil {
		return lab.Trial{}, err
	}
	var big, small *Problem
	return lab.Trial{Step: st.Name, Lesson: ID, Original: lab.OriginalOf(kc.Kernels, st.File),
		Compile: func(code string) ([]record.KernelReport, error) {
			if c, ok := RefusedOn(env.Device())[st.Name]; ok {
				return nil, c.Err()
			}
			l, err := st.PlanFor(AlexNet, env.Receipt.Device)
			if err != nil {
				return nil, err
			}
			src, err := st.Source(code)
			if err != nil {
				return nil, err
			}
			prog, err := env.BuildWith(src, compileOpts(st), l.Kernel)
			if err != nil {
				return nil, err
			}
			if !strings.Contains(prog.Compiled.PTX, ".entry "+l.Kernel+"(") {
				return nil, fmt.Errorf("conv %s: your source must define the kernel %s (extern \"C\", the step's parameters)", st.Name, l.Kernel)
			}
			return []record.KernelReport{prog.Report(l.Kernel, l.Config.Block.Count(), l.Config.SharedBytes)}, nil
		},
		Measure: func(code string) ([]record.Record, error) {
			if big == nil {
				if small, err = NewProblem(env, trySmall, 21, 0); err != nil {
					return nil, err
				}
				if big, err = NewProblem(env, AlexNet, 22, 1024); err != nil {
					return nil, err
				}
			}
			res, _, err := small.Check(st, code)
			if err != nil {
				return nil, err
			}
			if !res.OK {
				return nil, fmt.Errorf("on %v (every output): %w", trySmall, res.Err())
			}
			variant := lab.EditedVariant(st.Name, code)
			rec, err := big.Measure(st, code, caseOf(st), variant)
			return []record.Record{rec}, err
		},
		Recorded: lab.RecordedAs(caseOf(st), st.Name),
		Close: func() {
			for _, p := range []*Problem{big, small} {
				if p != nil {
					p.Free()
				}
			}
		},
	}, nil
}

// Try compiles code in place of a step's file, shows its compile report, and in the GPU mode checks
// it and times it beside the original step (lab.Env.Try): how a reader edits any step and reruns it.
func Try(env *lab.Env, step, code string) error {
	t, err := Trial(env, step)
	if err != nil {
		return err
	}
	return env.Try(t, code)
}

// Sanitize runs the reader's code for a step (the original when empty) once under
// compute-sanitizer (lab.Env.Sanitize) with tool ("" for memcheck; racecheck, synccheck,
// initcheck), and shows the first reports with their source lines, threads and blocks: Try's cell
// with Try replaced by Sanitize.
func Sanitize(env *lab.Env, step, code, tool string) error {
	t, err := Trial(env, step)
	if err != nil {
		return err
	}
	return env.Sanitize(t, code, tool)
}

// Profile runs the original step once under Nsight Compute, and the reader's code once more when
// code is not empty (lab.Env.Profile), each in a child process, with the sections that answer the
// lesson's question, and shows both profiles side by side and their warp stall reasons: Try's cell
// with Try replaced by Profile.
func Profile(env *lab.Env, step, code string) error {
	t, err := Trial(env, step)
	if err != nil {
		return err
	}
	return env.Profile(t, code)
}

// Walk shows a step's line of the run (time, rate, speedups, check) and its compile report.
func Walk(env *lab.Env, step string) error {
	st, err := StepByName(step)
	if err != nil {
		return err
	}
	if err := lab.ShowChange(ID, Steps, func(s Step) string { return s.Name }, func(s Step) (compile.Source, error) { return s.Source("") }, st.Name); err != nil {
		return err
	}
	if c, ok := RefusedOn(env.Device())[st.Name]; ok {
		return c.Err()
	}
	if src, err := st.Source(""); err == nil {
		env.ShowSASSCollapsed(src, compileOpts(st))
	}
	run, rerr := env.Shown(Lesson)
	if rerr != nil && !errors.Is(rerr, lab.ErrNoRecord) {
		return rerr
	}
	if run == nil {
		return nil
	}
	run = AtShapesOn(run, env.Device())
	l, _ := st.PlanFor(AlexNet, run.Receipt.Device)
	for _, k := range run.Kernels {
		if k.Kernel == st.Kernel && k.DynamicShared == l.Config.SharedBytes {
			show.Reports("compile report of "+k.Kernel+" ("+st.Name+") at AlexNet's layer", []record.KernelReport{k}).Display()
			break
		}
	}
	for _, c := range []string{caseOf(st), CaseDeep} {
		r, ok := run.Find(c, st.Name, 0)
		if !ok {
			continue
		}
		if r.Kind == "refused" {
			show.Note(show.Warning, st.Name+", "+c+": "+r.Note)
			continue
		}
		parts := []string{fmt.Sprintf("%s, %s: %s (min %s, max %s), %.1f TFLOP/s; %s", st.Name, c, bench.FormatMS(r.MedianMS), bench.FormatMS(r.MinMS), bench.FormatMS(r.MaxMS), r.GFLOPs/1e3, verdictOf(r))}
		for _, b := range []string{CuDNN, CuDNNTF32, Eager, Compiled} {
			if m := run.Median(c, b); m > 0 {
				parts = append(parts, fmt.Sprintf("%s vs %s (%s)", show.Times(m/r.MedianMS), b, bench.FormatMS(m)))
			}
		}
		show.Note(show.Outcome(r.Correct), strings.Join(parts, "; ")+". Launch: "+r.Note+". Device: "+r.Device+", "+r.Date+".")
	}
	return nil
}

// IntMaxAgrees says whether the signed-integer max of two floats' bits is the bits of their max.
func IntMaxAgrees(a, b float32) bool {
	ia, ib := int32(math.Float32bits(a)), int32(math.Float32bits(b))
	return math.Float32frombits(uint32(max(ia, ib))) == max(a, b)
}

// BitOrder is the demonstration table of float bits read as ints: the rows of a few floats, and
// of pairs whose integer max is or is not their float max.
func BitOrder() [][]string {
	var rows [][]string
	for _, v := range []float32{0, 0.25, 1, 2, 3.5, -0.5, -1, -2} {
		b := math.Float32bits(v)
		rows = append(rows, []string{fmt.Sprint(v), fmt.Sprintf("0x%08X", b), fmt.Sprint(int32(b)), fmt.Sprint(b)})
	}
	return rows
}

// ShowBitOrder shows why integer atomicMax works on float bits only for values >= 0.
func ShowBitOrder() {
	show.Table{Title: "A float's bits read as integers", Header: []string{"float", "bits", "as signed int", "as unsigned int"}, Rows: BitOrder(),
		Caption: "Sign, then exponent, then mantissa: for values >= 0 a larger float has a larger integer. For negatives the signed integers run backwards (-2 is above -1), and the unsigned ones are all above every positive."}.Display()
	var pairs [][]string
	for _, p := range [][2]float32{{0.25, 3}, {0, 1}, {-0.5, 0.25}, {-1, -2}, {-3, -0.5}} {
		a, b := p[0], p[1]
		im := math.Float32frombits(uint32(max(int32(math.Float32bits(a)), int32(math.Float32bits(b)))))
		pairs = append(pairs, []string{fmt.Sprint(a), fmt.Sprint(b), fmt.Sprint(max(a, b)), fmt.Sprint(im), map[bool]string{true: "right", false: "WRONG"}[IntMaxAgrees(a, b)]})
	}
	show.Table{Title: "max(a, b) by atomicMax on the bits", Header: []string{"a", "b", "float max", "integer max of the bits", ""}, Rows: pairs}.Display()
}

// NoReLUDemo runs step 6 without its ReLU on a small layer and at the article's layer (GPU mode)
// and shows the checks failing; in the no-GPU mode it shows the recorded run's demonstration.
func NoReLUDemo(env *lab.Env) error {
	if !env.GPU() {
		run, err := env.ShownOrNil(Lesson)
		if run == nil {
			return err
		}
		DemoTable(run).Display()
		return nil
	}
	if c, ok := RefusedOn(env.Device())["6 fused atomicMax"]; ok {
		return c.Err()
	}
	for _, s := range []Shape{{N: 2, C: 3, H: 37, W: 41, K: 96, R: 11, S: 4, P: 2}, AlexNet} {
		checked := 0
		if s == AlexNet {
			checked = 4096
		}
		p, err := NewProblem(env, s, 13, checked)
		if err != nil {
			return err
		}
		for _, st := range []Step{NoReLU, MustStep("7 fused tile pool")} {
			if c, ok := RefusedOn(env.Device())[st.Name]; ok {
				p.Free()
				return c.Err()
			}
			res, _, err := p.Check(st, "")
			if err != nil {
				p.Free()
				return err
			}
			msg := fmt.Sprintf("%s on %v (%s): %v", st.Name, s.Short(), p.CheckedLabel(true), res)
			if !res.OK {
				msg += ": " + res.Err().Error()
			}
			show.Note(show.Outcome(res.OK == st.relu()), msg)
		}
		p.Free()
	}
	return nil
}

// ShowFused shows the fused layer's table and chart, and the demonstration.
func ShowFused(env *lab.Env) error {
	return env.ShowRun(Lesson, func(run *record.Run) []show.Table {
		return []show.Table{FusedTable(run), DemoTable(run)}
	}, "05_fused_time")
}

// ShowDeep shows the deep layer's table and chart.
func ShowDeep(env *lab.Env) error {
	run, err := env.ShownOrNil(Lesson)
	if run == nil {
		return err
	}
	run = AtShapesOn(run, env.Device())
	ConvTable(run, CaseDeep).Display()
	if t, ok := lab.RefusedTable(run); ok {
		t.Display()
	}
	return Lesson.ShowFigures(run, "05_deep_time")
}

// AtShapesOn is a run as device d would have measured it at each record's own layer: a step that
// runs on d at AlexNet's layer but whose plan d refuses at the deep layer (the three-stage steps'
// shared memory on 8.6 and 8.9) becomes a refused row there. lab.WithoutRefused drops only the
// steps refused at the article's layer; a run measured on d has these rows already.
func AtShapesOn(run *record.Run, d gpu.DeviceInfo) *record.Run {
	out := *run
	out.Records = nil
	for _, r := range run.Records {
		if r.Case == CaseDeep && r.Kind == "kernel" {
			if st, err := StepByName(r.Variant); err == nil {
				if _, err := st.PlanFor(Deep, d); lab.IsRefusal(err) {
					r = refusedIn(CaseDeep, st, Deep, err)
				}
			}
		}
		out.Records = append(out.Records, r)
	}
	return &out
}

// ShowSweep shows the batch sweep's table and chart.
func ShowSweep(env *lab.Env) error {
	return env.ShowRun(Lesson, func(run *record.Run) []show.Table {
		return []show.Table{SweepTable(run)}
	}, "05_sweep")
}

// ShowTrajectory shows the article's 14 rounds and the chart of them beside this ladder.
func ShowTrajectory(env *lab.Env) error {
	TrajectoryTable().Display()
	run, err := env.ShownOrNil(Lesson)
	if run == nil {
		return err
	}
	return Lesson.ShowFigures(run, "05_trajectory")
}

// ShowTargets displays the targets table of the run.
func ShowTargets(env *lab.Env) error {
	return env.ShowTable(Lesson, Targets)
}

// Reports shows every compile report of the run.
func Reports(env *lab.Env) error {
	return env.ShowTable(Lesson, func(run *record.Run) show.Table {
		return show.Reports("Compile reports at AlexNet's first layer", run.Kernels)
	})
}

// ClosingNote writes the lesson's closing note from the run's own figures (nothing typed in).
func ClosingNote(env *lab.Env) error {
	run, err := env.ShownOrNil(Lesson)
	if run == nil {
		return err
	}
	show.Markdown(Closing(AtShapesOn(run, env.Device())))
	return nil
}

// Closing is the closing note's Markdown for a run.
func Closing(run *record.Run) string {
	var b strings.Builder
	r := run.Receipt
	fmt.Fprintf(&b, "**What this run measured** (%s, %s, %s).\n\n", r.Device.Name, dateOf(r.Date), r.Method)
	cu, tf := run.Median(CaseAlexNet, CuDNN), run.Median(CaseAlexNet, CuDNNTF32)
	fmt.Fprintf(&b, "* AlexNet's first layer: cuDNN takes %s in float32 and %s with TF32.", show.MS(cu), show.MS(tf))
	for _, x := range run.Select(CaseAlexNet) {
		if x.Kind == "kernel" && x.MedianMS > 0 {
			fmt.Fprintf(&b, " %s: %s (%s cuDNN fp32, rel L2 %.1e).", x.Variant, show.MS(x.MedianMS), show.Ratio(cu, x.MedianMS), x.RelL2)
		}
	}
	b.WriteString("\n")
	eg, cp := run.Median(CaseFused, Eager), run.Median(CaseFused, Compiled)
	fmt.Fprintf(&b, "* Conv + ReLU + pool: eager %s, torch.compile %s (TF32 on: %s and %s).", show.MS(eg), show.MS(cp), show.MS(run.Median(CaseFused, EagerTF32)), show.MS(run.Median(CaseFused, CompiledTF32)))
	for _, x := range run.Select(CaseFused) {
		if x.Kind == "kernel" && x.MedianMS > 0 {
			fmt.Fprintf(&b, " %s: %s (%s eager, %s torch.compile, rel L2 %.1e).", x.Variant, show.MS(x.MedianMS), show.Ratio(eg, x.MedianMS), show.Ratio(cp, x.MedianMS), x.RelL2)
		}
	}
	b.WriteString("\n")
	dc := run.Median(CaseDeep, CuDNN)
	fmt.Fprintf(&b, "* The deep 3x3 layer: cuDNN %s (TF32 %s).", show.MS(dc), show.MS(run.Median(CaseDeep, CuDNNTF32)))
	for _, x := range run.Select(CaseDeep) {
		if x.Kind == "kernel" && x.MedianMS > 0 {
			fmt.Fprintf(&b, " %s: %s (%s).", x.Variant, show.MS(x.MedianMS), show.Ratio(dc, x.MedianMS))
		}
	}
	b.WriteString("\n")
	for _, x := range run.Select(CaseCross) {
		fmt.Fprintf(&b, "* Cross-check, %s on our inputs: rel L2 %.1e against the float64 reference (%s).\n", x.Variant, x.RelL2, map[bool]string{true: "within the " + x.Tol + " bound", false: "outside the " + x.Tol + " bound"}[x.Correct])
	}
	b.WriteString("* Targets: ")
	var ts []string
	for _, row := range Targets(run).Rows {
		ts = append(ts, fmt.Sprintf("%s: **%s** (%s)", row[0], row[2], row[1]))
	}
	b.WriteString(strings.Join(ts, "; ") + ".\n")
	return b.String()
}

func dateOf(rfc string) string {
	if len(rfc) >= 10 {
		return rfc[:10]
	}
	return rfc
}

// compileOpts are a step's compile options (its defines; the env's architecture).
func compileOpts(st Step) compile.Options { return compile.Options{Defines: st.Defines} }

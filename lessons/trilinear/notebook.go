package trilinear

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
	kt "github.com/cudalessons/cudalessons/kernels/trilinear"
)

// The notebook's cells call these: each shows one thing and keeps the cell a line long.

// Intro shows the problem and its floor (the minimum traffic at the measured copy bandwidth),
// compiles every kernel file, and proves the float64 op's gradients by finite differences.
func Intro(env *lab.Env) error {
	s := ArticleShape
	w := ForwardWork(s, 4)
	floor := "unknown (no copy bandwidth recorded)"
	if bw := env.Receipt.CopyGBps; bw > 0 {
		floor = fmt.Sprintf("%s at the %.0f GB/s copy bandwidth of %s; 85%% of it is %s", bench.FormatMS(w.Bytes/(bw*1e9)*1e3), bw, deviceName(env),
			bench.FormatMS(w.Bytes/(0.85*bw*1e9)*1e3))
	}
	show.Table{Title: "The article's problem", Header: []string{"quantity", "value"}, Rows: [][]string{
		{"shape", "feats (65536, 8, 256), points (65536, 3) in [-1, 1], out (65536, 256); float32"},
		{"feats", fmt.Sprintf("%.0f MiB, read once by the forward", float64(4*s.FeatsLen())/(1<<20))},
		{"out", fmt.Sprintf("%.0f MiB", float64(4*s.OutLen())/(1<<20))},
		{"forward work", fmt.Sprintf("%.0f MFLOP (8 multiply-adds per output) for %.0f MB of traffic: %.2f FLOP per byte, memory-bound", w.FLOPs/1e6, w.Bytes/1e6, w.FLOPs/w.Bytes)},
		{"forward floor", floor},
		{"points outside [-1, 1]", "clamped to the cell (the gradient of a clamped coordinate is 0); NaN propagates. The article's kernel extrapolates."},
		{"N or F zero", "valid: an empty output, no launch. Mismatched shapes are refused before any launch."},
	}}.Display()
	if err := env.CompileFiles(kt.Kernels, kt.Files(), nil); err != nil {
		return err
	}
	for i, gs := range GradCheckShapes {
		res, err := GradCheckCPU(gs, uint64(30+i))
		if err != nil {
			return err
		}
		show.Note(show.Outcome(res.OK), fmt.Sprintf("float64 op, %v: %v", gs, res))
	}
	return nil
}

func deviceName(env *lab.Env) string {
	if env.Receipt.Device.Name != "" {
		return env.Receipt.Device.Name
	}
	return "the recorded GPU"
}

// Overview shows the lesson's run: in the GPU mode the run kept on this GPU by an earlier cell (or
// copied there from the reproduce command), measured now and kept when there is none; otherwise the
// recorded run. Then the forward table, the article's table and the PyTorch cross-check.
func Overview(env *lab.Env) error {
	run, err := env.ShownOrNil(Lesson)
	if run == nil {
		return err
	}
	show.Note(show.Info, "Run shown: "+run.Receipt.String())
	ForwardTable(run).Display()
	ArticleTable(run).Display()
	if x, ok := run.Find("crosscheck", Eager, 0); ok {
		show.Note(show.Outcome(x.Correct), fmt.Sprintf("Cross-check: PyTorch's forward on our inputs (%s) against our float64 reference: rel L2 %.1e, max abs %.1e (%s tolerance).", x.Shape, x.RelL2, x.MaxAbs, x.Tol))
	} else if r, ok := run.Find("forward", Eager, 0); ok && r.MedianMS <= 0 {
		show.Note(show.Warning, "PyTorch columns: "+r.Note)
	}
	return Lesson.ShowFigures(run, "07_forward_time", "07_forward_bandwidth")
}

// ShowSource shows one kernel file with line numbers.
func ShowSource(file string) error { return lab.ShowSource(kt.Kernels, file) }

// Walk shows a step: its source, its compile report at the article's shape, and its line of the run.
func Walk(env *lab.Env, step string) error {
	st, err := StepByName(step)
	if err != nil {
		return err
	}
	if err := lab.ShowChange(ID, Steps, func(s Step) string { return s.Name }, func(s Step) (compile.Source, error) { return kt.Source(s.File) }, st.Name); err != nil {
		return err
	}
	run, rerr := env.Shown(Lesson)
	if rerr != nil && !errors.Is(rerr, lab.ErrNoRecord) {
		return rerr
	}
	var rep record.KernelReport
	found := false
	if run != nil {
		for _, k := range run.Kernels {
			if k.Kernel == st.Kernel {
				rep, found = k, true
			}
		}
	}
	if !found {
		src, err := kt.Source(st.File)
		if err != nil {
			return err
		}
		prog, err := env.Build(src, st.Kernel)
		if err != nil {
			return err
		}
		l, _ := st.PlanFor(ArticleShape, env.Receipt.Device, true)
		rep = prog.Report(st.Kernel, l.Config.Block.Count(), 0)
	}
	show.Reports("compile report of "+st.Kernel+" at the article's shape", []record.KernelReport{rep}).Display()
	if src, err := kt.Source(st.File); err == nil {
		env.ShowSASSCollapsed(src, compile.Options{})
	}
	if run == nil {
		return nil
	}
	r, ok := run.Find(string(st.Kind), st.Name, 0)
	if !ok {
		show.Note(show.Warning, st.Name+" is not in this run.")
		return nil
	}
	parts := []string{fmt.Sprintf("%s: %s (min %s, max %s), %.0f GB/s = %s of the copy bandwidth; %s", st.Name, bench.FormatMS(r.MedianMS),
		bench.FormatMS(r.MinMS), bench.FormatMS(r.MaxMS), r.GBps, show.Pct(r.PctBW), verdictOf(r))}
	for _, b := range []struct{ c, v string }{{"forward", Eager}, {"forward", Compiled}, {"forward", "1 article"}, {string(KindBwdFeats), Eager + " backward"}, {string(KindTrain), Separate}} {
		if b.c == string(st.Kind) && b.v != st.Name {
			if m := run.Median(b.c, b.v); m > 0 {
				parts = append(parts, fmt.Sprintf("%s vs %s (%s)", show.Times(m/r.MedianMS), b.v, bench.FormatMS(m)))
			}
		}
	}
	show.Note(show.Outcome(r.Correct), strings.Join(parts, "; ")+". Launch: "+r.Note+". Device: "+r.Device+", "+r.Date+".")
	return nil
}

// Try compiles code in place of a step's file (the same kernel names and parameters) and shows its
// compile report; in the GPU mode it checks it at the article's shape on NaN-poisoned outputs
// (2048 random points) and times it beside the original step, in the same run. It is how a reader
// edits any step in the notebook and reruns it.
func Try(env *lab.Env, step, code string) (err error) {
	st, err := StepByName(step)
	if err != nil {
		return err
	}
	code, invite := lab.ReaderCode(code, lab.OriginalOf(kt.Kernels, st.File))
	defer lab.InviteAfter(invite, st.Name, &err)
	l, err := st.PlanFor(ArticleShape, env.Receipt.Device, true)
	if err != nil {
		return err
	}
	src, err := st.source(l, code)
	if err != nil {
		return err
	}
	var prog *lab.Program
	if err := env.AsReader(func() (err error) { prog, err = env.Build(src, st.Kernel); return err }); err != nil {
		return err
	}
	if !strings.Contains(prog.Compiled.PTX, ".entry "+st.Kernel+"(") {
		return fmt.Errorf("trilinear %s: your source must define the kernel %s (extern \"C\", the step's parameters)", st.Name, st.Kernel)
	}
	show.Reports("compile report", []record.KernelReport{prog.Report(st.Kernel, l.Config.Block.Count(), 0)}).Display()
	if !env.GPU() {
		if run, err := env.Recorded(ID); err == nil {
			if r, ok := run.Find(string(st.Kind), st.Name, 0); ok {
				show.Records("recorded "+st.Name, []record.Record{r}, run.Receipt).Display()
			}
		}
		show.Note(show.Info, capitalWho(code)+" compiled. Running, checking and timing it needs a GPU ("+env.Mode.String()+").")
		return nil
	}
	p, err := NewProblem(env, ArticleShape, 11, -1, 1, 2048, 0)
	if err != nil {
		return err
	}
	defer p.Free()
	orig, err := p.Measure(st, "", st.Name)
	if err != nil {
		return err
	}
	title := fmt.Sprintf("%s at %v (checked on %s)", st.Name, ArticleShape, p.Checked())
	if code == "" { // the step as it is: no comparison with itself
		show.Records(title, []record.Record{orig}, env.Receipt).Display()
		return nil
	}
	var mine record.Record
	err = env.Guarded(st.Name, orig.MedianMS, func() (err error) { mine, err = p.Measure(st, code, st.Name+" (this cell)"); return err })
	if lab.ShowFault(st.Name, err, "") {
		return nil
	}
	recs := []record.Record{orig}
	if mine.MedianMS > 0 || err == nil {
		recs = append(recs, mine)
	}
	show.Records(title, recs, env.Receipt, st.Name).Display()
	if err != nil {
		show.Note(show.Warning, "Your kernel is not correct yet: "+err.Error())
	}
	return nil
}

// ShowBackward shows the gradients' and the training step's tables and chart.
func ShowBackward(env *lab.Env) error {
	return env.ShowRun(Lesson, func(run *record.Run) []show.Table {
		return []show.Table{BackwardTable(run), TrainTable(run)}
	}, "07_backward_time")
}

// Sweeps shows the N and F sweeps, tables and charts.
func Sweeps(env *lab.Env) error {
	return env.ShowRun(Lesson, func(run *record.Run) []show.Table {
		return []show.Table{SweepTable(run, CaseSweepN), SweepTable(run, CaseSweepF)}
	}, "07_sweep_n", "07_sweep_f")
}

// Autograd shows the autograd Functions at work: the float64 op's gradient check (either mode);
// in the GPU mode the GPU op's gradient check on small shapes (all elements of both gradients),
// and the op against the references at an awkward shape and at the article's shape with points
// outside the cell; and the run's gradient-check table.
func Autograd(env *lab.Env) error {
	s := Shape{N: 3, F: 5}
	cpu, err := GradCheckCPU(s, 5)
	if err != nil {
		return err
	}
	show.Note(show.Outcome(cpu.OK), fmt.Sprintf("gradcheck of the float64 op on %v: %v", s, cpu))
	if env.GPU() {
		for _, gs := range []Shape{{N: 3, F: 5}, {N: 4, F: 8}} {
			g, err := GradCheckGPU(env, gs, 5, 0)
			if err != nil {
				return err
			}
			show.Note(show.Outcome(g.OK), fmt.Sprintf("gradcheck of the GPU op on %v: %v", gs, g))
		}
		for _, os := range []Shape{{N: 1000, F: 37}, {N: 0, F: 16}, ArticleShape} {
			r, err := OpCheck(env, os, 9, -1.25, 1.25, 2048)
			if err != nil {
				return err
			}
			show.Note(show.Outcome(r.OK()), "GPU op, points in [-1.25, 1.25]: "+r.String())
		}
	} else {
		show.Note(show.Info, "The GPU op's checks need a GPU ("+env.Mode.String()+"); the recorded run's are below.")
	}
	run, err := env.ShownOrNil(Lesson)
	if run == nil {
		return err
	}
	GradTable(run).Display()
	return nil
}

// ShowTargets displays the targets table of the last run.
func ShowTargets(env *lab.Env) error {
	return env.ShowTable(Lesson, Targets)
}

// Reports shows every compile report of the last run.
func Reports(env *lab.Env) error {
	return env.ShowTable(Lesson, func(run *record.Run) show.Table {
		return show.Reports("Compile reports at the article's shape", run.Kernels)
	})
}

// capitalWho names the kernel a Try compiled: the reader's, or the step's own for unedited code.
func capitalWho(code string) string {
	if code == "" {
		return "The step's kernel"
	}
	return "Your kernel"
}

// Trial is a step as a Profile cell runs it (lab.Trial): code in place of the step's file (the same
// kernel names and parameters), compiled at the article's shape, then (GPU mode) checked on
// NaN-poisoned outputs of 2048 random points and timed there, as Try does.
func Trial(env *lab.Env, step string) (lab.Trial, error) {
	st, err := StepByName(step)
	if err != nil {
		return lab.Trial{}, err
	}
	l, err := st.PlanFor(ArticleShape, env.Receipt.Device, true)
	if err != nil {
		return lab.Trial{}, err
	}
	var p *Problem
	return lab.Trial{Step: st.Name, Lesson: ID,
		Compile: func(code string) ([]record.KernelReport, error) {
			src, err := st.source(l, code)
			if err != nil {
				return nil, err
			}
			prog, err := env.Build(src, st.Kernel)
			if err != nil {
				return nil, err
			}
			if !strings.Contains(prog.Compiled.PTX, ".entry "+st.Kernel+"(") {
				return nil, fmt.Errorf("trilinear %s: your source must define the kernel %s (extern \"C\", the step's parameters)", st.Name, st.Kernel)
			}
			return []record.KernelReport{prog.Report(st.Kernel, l.Config.Block.Count(), 0)}, nil
		},
		Measure: func(code string) ([]record.Record, error) {
			if p == nil {
				if p, err = NewProblem(env, ArticleShape, 11, -1, 1, 2048, 0); err != nil {
					return nil, err
				}
			}
			variant := lab.EditedVariant(st.Name, code)
			rec, err := p.Measure(st, code, variant)
			return []record.Record{rec}, err
		},
		Recorded: lab.RecordedAs(string(st.Kind), st.Name),
		Close: func() {
			if p != nil {
				p.Free()
			}
		},
	}, nil
}

// Profile runs the original step once under Nsight Compute, and the reader's code once more when
// code is not empty (lab.Env.Profile), each in a child process, with the sections that answer the
// lesson's question (L2 hit rates and DRAM bytes of the gathers), and shows both profiles side by
// side and their warp stall reasons: Try's cell with Try replaced by Profile. Without a GPU it shows
// the recorded profile.
func Profile(env *lab.Env, step, code string) error {
	t, err := Trial(env, step)
	if err != nil {
		return err
	}
	return env.Profile(t, code)
}

// ShowSASS shows, collapsed, the machine code of a step's own file for this GPU (for the recorded
// GPU's architecture without one), with the count table of its loads, stores and arithmetic: where
// the reader sees 32-bit loads become 128-bit ones.
func ShowSASS(env *lab.Env, step string) error {
	st, err := StepByName(step)
	if err != nil {
		return err
	}
	src, err := kt.Source(st.File)
	if err != nil {
		return err
	}
	env.ShowSASSCollapsed(src, compile.Options{})
	return nil
}

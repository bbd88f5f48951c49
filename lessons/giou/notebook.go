package giou

import (
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
	kg "github.com/cudalessons/cudalessons/kernels/giou"
)

// The notebook's cells call these: each shows one thing and keeps the cell a line long.

// Intro shows the workload and the conventions for degenerate input, compiles every kernel file,
// and proves the float64 loss's gradient by finite differences.
func Intro(env *lab.Env) error {
	bt := Generate(ArticleShape, ArticleSeed)
	hist := map[string]int{}
	for _, c := range bt.Counts {
		switch {
		case c == 0:
			hist["0"]++
		case c < 4:
			hist["1-3"]++
		case c < 10:
			hist["4-9"]++
		default:
			hist["10+"]++
		}
	}
	loss, _ := bt.Reference()
	show.Table{Title: "The article's workload (seed 42)", Header: []string{"quantity", "value"}, Rows: [][]string{
		{"batch", fmt.Sprintf("B = %d images, room for M = %d boxes each: pred and target (%d, %d, 4) float32, %.1f MiB each", bt.B, bt.M, bt.B, bt.M, float64(16*bt.Slots())/(1<<20))},
		{"boxes per image", fmt.Sprintf("floor(|N(0, 3)|) clipped to [0, 255]: %d valid boxes in all (%.2f per image); images with 0: %d, 1-3: %d, 4-9: %d, 10+: %d",
			bt.Total(), float64(bt.Total())/float64(bt.B), hist["0"], hist["1-3"], hist["4-9"], hist["10+"])},
		{"valid slots", fmt.Sprintf("%.2f%% of the padded batch: a padded loss computes %.0fx more boxes than it keeps", 100*float64(bt.Total())/float64(bt.Slots()), float64(bt.Slots())/float64(bt.Total()))},
		{"predictions", fmt.Sprintf("each target jittered (centre N(0, %.1f x size), size x exp(N(0, 0.3))): %d of the %d miss their target (I = 0), where only the enclosing-box term of GIoU pulls them back",
			Jitter, bt.Misses(), bt.Total())},
		{"loss (float64 reference)", fmt.Sprintf("%.6f = mean of 1 - GIoU over the valid boxes", loss)},
	}}.Display()
	t := show.Table{Title: "Degenerate input: the lesson's conventions", Header: []string{"input", "what happens"}}
	for _, c := range Conventions {
		t.Rows = append(t.Rows, []string{c[0], c[1]})
	}
	t.Display()
	if err := env.CompileFiles(kg.Kernels, kg.Files(), nil); err != nil {
		return err
	}
	for i, gs := range GradCheckShapes {
		res, err := GradCheckCPU(gs, uint64(30+i))
		if err != nil {
			return err
		}
		show.Note(show.Outcome(res.OK), fmt.Sprintf("float64 loss, %v: %v", gs, res))
	}
	return nil
}

// Overview shows the lesson's run (measured on this GPU and kept, or the recorded one): the loss
// table, the article's table, the cross-checks and the time chart.
func Overview(env *lab.Env) error {
	run, err := env.ShownOrNil(Lesson)
	if run == nil {
		return err
	}
	show.Note(show.Info, "Run shown: "+run.Receipt.String())
	ForwardTable(run).Display()
	ArticleTable(run).Display()
	for _, r := range run.Select(CaseCross) {
		show.Note(show.Outcome(r.Correct), "Cross-check, "+r.Variant+": "+r.Note)
	}
	if r, ok := run.Find(string(KindForward), Eager, 0); ok && r.MedianMS <= 0 {
		show.Note(show.Warning, "PyTorch columns: "+r.Note)
	}
	return Lesson.ShowFigures(run, "06_forward_time")
}

// Trial is a step as the notebook lets a reader edit it: code with the same kernel names and
// parameters as the step's file, compiled, checked on the article's workload (NaN-poisoned loss and
// gradient against the float64 reference) and timed against the original step (lab.Env.Try).
func Trial(env *lab.Env, step string) (lab.Trial, error) {
	st, err := StepByName(step)
	if err != nil {
		return lab.Trial{}, err
	}
	l, err := st.PlanFor(ArticleShape, true)
	if err != nil {
		return lab.Trial{}, err
	}
	var p *Problem
	return lab.Trial{Step: st.Name, Lesson: ID, Original: lab.OriginalOf(kg.Kernels, st.File),
		Compile: func(code string) ([]record.KernelReport, error) {
			reps, err := compileReports(env, st, l, code)
			if err != nil {
				return nil, err
			}
			if code != "" {
				prog, err := env.Build(compile.Source{Name: "my_" + st.File, Code: code})
				if err != nil {
					return nil, err
				}
				if !strings.Contains(prog.Compiled.PTX, ".entry "+st.Kernel+"(") {
					return nil, fmt.Errorf("giou %s: your source must define the kernel %s (extern \"C\", the step's parameters)", st.Name, st.Kernel)
				}
			}
			return reps, nil
		},
		Measure: func(code string) ([]record.Record, error) {
			if p == nil {
				if p, err = NewProblem(env, Generate(ArticleShape, ArticleSeed), 0); err != nil {
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

// Try is the notebook's "edit any step" cell: code in place of the step's kernel file, compiled,
// checked and timed beside the original (lab.Env.Try).
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

// ShowSource shows one kernel file with line numbers.
func ShowSource(file string) error { return lab.ShowSource(kg.Kernels, file) }

// ShowTrain shows the forward+backward table and chart.
func ShowTrain(env *lab.Env) error {
	return env.ShowRun(Lesson, func(run *record.Run) []show.Table {
		return []show.Table{TrainTable(run)}
	}, "06_train_time")
}

// Transfer shows the targets' host-to-device copies, table and chart.
func Transfer(env *lab.Env) error {
	return env.ShowRun(Lesson, func(run *record.Run) []show.Table {
		return []show.Table{TransferTable(run)}
	}, "06_h2d")
}

// Sweep shows the time over the batch size, table and chart.
func Sweep(env *lab.Env) error {
	return env.ShowRun(Lesson, func(run *record.Run) []show.Table {
		return []show.Table{SweepTable(run)}
	}, "06_sweep_b")
}

// Autograd shows the autograd Functions at work: the float64 op's gradient check (either mode); in
// the GPU mode the GPU op's gradient check and the op against the reference on an awkward batch and
// on the article's workload with a misaligned pred (the general kernel); and the run's checks.
func Autograd(env *lab.Env) error {
	s := Shape{B: 4, M: 3}
	cpu, err := GradCheckCPU(s, 5)
	if err != nil {
		return err
	}
	show.Note(show.Outcome(cpu.OK), fmt.Sprintf("gradcheck of the float64 op on %v: %v", s, cpu))
	if env.GPU() {
		g, err := GradCheckGPU(env, s, 5)
		if err != nil {
			return err
		}
		show.Note(show.Outcome(g.OK), fmt.Sprintf("gradcheck of the GPU op on %v: %v", s, g))
		for _, c := range []struct {
			s   Shape
			off int
		}{{Shape{B: 333, M: 37}, 0}, {Shape{B: 0, M: 5}, 0}, {ArticleShape, 1}} {
			r, err := OpCheck(env, Generate(c.s, 9), c.off)
			if err != nil {
				return err
			}
			show.Note(show.Outcome(r.OK()), fmt.Sprintf("GPU op (pred offset %d floats): %v", c.off, r))
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

// ShowTargets displays the targets table of the run.
func ShowTargets(env *lab.Env) error {
	return env.ShowTable(Lesson, Targets)
}

// Reports shows every compile report of the run.
func Reports(env *lab.Env) error {
	return env.ShowTable(Lesson, func(run *record.Run) show.Table {
		return show.Reports("Compile reports at the article's workload", run.Kernels)
	})
}

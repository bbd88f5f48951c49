package hopper

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
	kh "github.com/cudalessons/cudalessons/kernels/hopper"
	"github.com/cudalessons/cudalessons/lessons/conv"
	"github.com/cudalessons/cudalessons/lessons/matmul"
)

// The notebook's cells call these: each shows one thing and keeps the cell a line long.

// TryShape is the shape on which Try and the exercises check a kernel on every output: partial tiles
// in M, N and K for the TMA steps.
var TryShape = matmul.Shape{M: 256, N: 256, K: 128}

// Intro shows the mode banner, the problem with its floors on this GPU, the tolerances, and whether
// this GPU and this NVRTC can run the lesson's steps at all.
func Intro(env *lab.Env) error {
	show.Note(show.Info, env.Banner())
	s := Article
	t := show.Table{Title: "The lesson's problem", Header: []string{"quantity", "value"}, Rows: [][]string{
		{"shape", "C (4096 x 4096) = A (4096 x 4096) · B (4096 x 4096), row-major, in fp16 or bf16; sums in float32; inputs uniform in [-1, 1) rounded to the format"},
		{"work", fmt.Sprintf("%.1f GFLOP", s.FLOPs()/1e9)},
	}}
	for _, f := range DTypes {
		if p := env.Receipt.PeakFor(f); p.GFLOPS > 0 {
			t.Rows = append(t.Rows, []string{strings.ToUpper(f) + " tensor peak (datasheet, dense)", fmt.Sprintf("%.0f TFLOP/s: no kernel beats %s", p.GFLOPS/1e3, bench.FormatMS(s.FLOPs()/(p.GFLOPS*1e9)*1e3))})
		}
	}
	t.Display()
	tt := show.Table{Title: "Tolerances (each kernel against the float64 product of the same 16-bit inputs)", Header: []string{"format", "rel L2", "element", "floor at K = 4096", "why"}}
	for _, f := range DTypes {
		tol := Tolerance(f, s.K)
		tt.Rows = append(tt.Rows, []string{f, fmt.Sprintf("%.0e", tol.RelL2), fmt.Sprintf("%.0e x |ref|", tol.Rel), fmt.Sprintf("%.1e", tol.Floor), tol.Why})
	}
	tt.Display()
	if err := NeedHopper("steps", env.Device()); err != nil {
		show.Note(show.Info, "This GPU cannot run the lesson's steps: "+err.Error()+". The cells show the recorded run (a Hopper GPU) and the sources.")
	}
	if err := compile.CheckArch(Arch); err != nil {
		show.Note(show.Info, "This NVRTC cannot compile the steps: "+err.Error()+". The cells show the recorded compile reports.")
	}
	return nil
}

// Swizzle draws the 128-byte swizzle that TMA writes and wgmma reads.
func Swizzle(env *lab.Env) error {
	p, err := SwizzleFigure()
	if err != nil {
		return err
	}
	return show.Plot(p)
}

// Overview runs the lesson on a Hopper GPU (or shows the recorded run) and shows both formats'
// ladders beside cuBLAS.
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
	if t, ok := lab.RefusedTable(run); ok { // a GPU without wgmma: cuBLAS only, then the recorded H100 run
		t.Display()
		LadderTable(run, FP16).Display()
		rec, err := env.Recorded(ID)
		if err != nil {
			return env.NoRecording(err)
		}
		show.Note(show.Info, "The steps, as recorded on a Hopper GPU: "+rec.Receipt.String())
		run = rec
	}
	LadderTable(run, FP16).Display()
	LadderTable(run, BF16).Display()
	return nil
}

// unbuildable says whether err is this NVRTC's inability to compile compute_90a (not a fault of the
// source).
func unbuildable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "came with CUDA 12.0")
}

// walkOrder is the order Walk compares each step with the one before it: the 16-bit ladder, the
// float32-in products and the convolutions, each built on the ladder's pipeline, then the variants.
func walkOrder() []Step {
	return append(append(append(append(append([]Step{}, Steps...), Accurate...), Convs...), Variants...), ConvVariants...)
}

// Walk shows one step: its source with line numbers, its compile report (the recorded one, or
// compiled now), and its lines of the run in both formats.
func Walk(env *lab.Env, step string) error {
	st, err := StepByName(step)
	if err != nil {
		return err
	}
	src, err := st.Source("")
	if err != nil {
		return err
	}
	if err := lab.ShowChange(ID, walkOrder(), func(s Step) string { return s.Name }, func(s Step) (compile.Source, error) { return s.Source("") }, st.Name); err != nil {
		return err
	}
	run, rerr := env.Shown(Lesson)
	var rep record.KernelReport
	found := false
	if run != nil {
		for _, k := range run.Kernels {
			if k.Kernel == st.Kernel && !found {
				rep, found = k, true
			}
		}
	}
	if !found && NeedHopper(st.Name, env.Device()) == nil {
		rep, err = compileReport(env, st)
		switch {
		case unbuildable(err):
			show.Note(show.Info, err.Error())
		case err != nil:
			return err
		default:
			found = true
		}
	}
	at := "4096^3"
	if st.Conv {
		at = "the deep layer"
	}
	if found {
		show.Reports("compile report of "+st.Kernel+" at "+at, []record.KernelReport{rep}).Display()
	}
	if NeedHopper(st.Name, env.Device()) == nil {
		env.ShowSASSCollapsed(src, st.Options(FP16, env.Device()))
	}
	if rerr != nil {
		if errors.Is(rerr, lab.ErrNoRecord) {
			return nil
		}
		return rerr
	}
	var recs []record.Record
	for _, f := range DTypes {
		if r, ok := run.Find(f, st.Name, 0); ok {
			recs = append(recs, r)
		}
		if r, ok := run.Find(f, VendorName(f), 0); ok {
			recs = append(recs, r)
		}
	}
	what := "cuBLAS"
	switch {
	case st.Conv:
		recs, what = run.Select(ConvCase), "cuDNN"
	case st.Products != "":
		recs = run.Select(Float32)
	}
	show.Records(st.Name+" beside "+what+" at "+at, recs, run.Receipt).Display()
	return nil
}

// compileReport compiles a step for compute_90a and reports it at the lesson's launch (the static
// shared memory only, without a GPU).
func compileReport(env *lab.Env, st Step) (record.KernelReport, error) {
	src, err := st.Source("")
	if err != nil {
		return record.KernelReport{}, err
	}
	prog, err := env.BuildWith(src, st.Options(FP16, env.Device()), st.Kernel)
	if err != nil {
		return record.KernelReport{}, err
	}
	cfg, err := st.headline(env.Device())
	if err != nil {
		return record.KernelReport{}, err
	}
	return prog.Report(st.Kernel, cfg.Block.Count(), cfg.SharedBytes), nil
}

// Try compiles a reader's version of a step (same file layout, kernel name and parameters), checks
// it against float64 on every output of a small problem and on a sample of the lesson's (TryShape
// and 4096^3 in fp16, or in float32 for the float32-in steps; TryConvShape and the deep layer for a
// convolution), and times it beside the original on the large one. Without a Hopper (or with an
// NVRTC older than 12.0) it says what it could not do.
func Try(env *lab.Env, step, code string) (err error) {
	st, err := StepByName(step)
	if err != nil {
		return err
	}
	if err := NeedHopper(st.Name, env.Device()); err != nil {
		return err
	}
	code, invite := lab.ReaderCode(code, lab.OriginalOf(kh.Kernels, st.File))
	defer lab.InviteAfter(invite, st.Name, &err)
	src, err := st.Source(code)
	if err != nil {
		return err
	}
	var prog *lab.Program
	err = env.AsReader(func() (err error) {
		prog, err = env.BuildWith(src, st.Options(FP16, env.Device()), st.Kernel)
		return err
	})
	if unbuildable(err) {
		show.Note(show.Info, "Not compiled: "+err.Error())
		return nil
	}
	if err != nil {
		return err
	}
	cfg, err := st.headline(env.Device())
	if err != nil {
		return err
	}
	whose := "your "
	if code == "" {
		whose = "the step's "
	}
	show.Reports("compile report of "+whose+st.Kernel, []record.KernelReport{prog.Report(st.Kernel, cfg.Block.Count(), cfg.SharedBytes)}).Display()
	if !env.GPU() {
		show.Note(show.Info, "The kernel compiled. Checking and timing it needs a Hopper GPU ("+env.Mode.String()+").")
		return nil
	}
	err = env.Guarded(st.Name, 0, func() error { return tryMeasured(env, st, code) })
	if lab.ShowFault(st.Name, err, "") {
		return nil
	}
	return err
}

// tryMeasured is Try's check and timing on the GPU, under Try's deadline.
func tryMeasured(env *lab.Env, st Step, code string) error {
	if st.Conv {
		checked := conv.CheckCount(true)
		return tryOn(env, st, code, TryConvShape.String(), "the sampled deep layer", func(i int) (tryProblem, error) {
			if i == 0 {
				p, err := NewConvProblem(env, TryConvShape, 31, 0)
				return tryLayer{p}, err
			}
			p, err := NewConvProblem(env, conv.Deep, 32, checked)
			return tryLayer{p}, err
		})
	}
	return tryOn(env, st, code, TryShape.String(), "the sampled 4096^3", func(i int) (tryProblem, error) {
		s := [2]matmul.Shape{TryShape, Article}[i]
		if _, err := st.Plan(s, env.Device()); err != nil {
			return nil, nil // a shape the step does not take
		}
		p, err := newProduct(env, st, s, 31)
		return tryProduct{p}, err
	})
}

// TryConvShape is the layer on which Try checks a reader's convolution on every output: channels and
// filters off the tiles, rows wider than a tile.
var TryConvShape = conv.Shape{N: 2, C: 20, H: 13, W: 70, K: 40, R: 3, S: 1, P: 1}

// tryProblem is a problem Try runs a reader's step on: a product or a layer.
type tryProblem interface {
	check(st Step, code string) (check.Result, error)
	measure(st Step, code string) ([]record.Record, error) // checked, then timed
	Free()
	What() string // the outputs a check compares
}

// tryProduct and tryLayer are a product and a layer as Try runs them.
type (
	tryProduct struct{ product }
	tryLayer   struct{ *ConvProblem }
)

func (p tryProduct) check(st Step, code string) (check.Result, error) { return p.Check(st, code) }
func (p tryProduct) measure(st Step, code string) ([]record.Record, error) {
	rec, err := p.Measure("try", st, code)
	return []record.Record{rec}, err
}
func (p tryLayer) check(st Step, code string) (check.Result, error) { return p.CheckConv(st, code) }
func (p tryLayer) measure(st Step, code string) ([]record.Record, error) {
	return p.Measure("try", st, code)
}
func (p tryLayer) What() string { return p.CheckedLabel(false) }

// tryOn checks the reader's step (code) on the small problem open(0) makes, every output against
// float64, then on the large one open(1) makes, whose sample it also times beside the original. A
// wrong result is shown (which problem, which check), not returned as an error. A nil problem from
// open (a step that cannot take the small shape) is skipped.
func tryOn(env *lab.Env, st Step, code, small, large string, open func(i int) (tryProblem, error)) error {
	for i := 0; i < 2; i++ {
		p, err := open(i)
		if err != nil {
			return err
		}
		if p == nil {
			continue
		}
		res, err := p.check(st, code)
		if err != nil {
			p.Free()
			return err
		}
		if !res.OK {
			p.Free()
			show.Note(show.Failure, fmt.Sprintf("Your %s is wrong on %s (%s): %v", st.Name, [2]string{small, large}[i], p.What(), res.Err()))
			return nil
		}
		if i == 0 {
			p.Free()
			continue
		}
		var mine []record.Record
		if code != "" {
			if mine, err = p.measure(st, code); err != nil {
				p.Free()
				return err
			}
		}
		orig, err := p.measure(st, "")
		p.Free()
		if err != nil {
			return err
		}
		if code == "" { // the step as it is: no comparison with itself
			show.Records(st.Name+", "+large, orig, env.Receipt).Display()
			continue
		}
		for j := range mine {
			mine[j].Variant = "your " + mine[j].Variant
		}
		show.Records("your kernel beside the original, "+large, append(mine, orig...), env.Receipt).Display()
	}
	show.Note(show.Success, "Correct on every output of "+small+" and on "+large+".")
	return nil
}

// Conv shows the deep convolution: steps 7 and 8 beside cuDNN and lesson 05's steps, with each one's
// error against float64, and the chart. On a GPU that refuses the steps it shows this GPU's cuDNN and
// lesson 05's steps, then the recorded Hopper run.
func Conv(env *lab.Env) error {
	run, err := env.ShownOrNil(Lesson)
	if run == nil {
		return err
	}
	ConvTable(run).Display()
	if _, refused := lab.RefusedTable(run); refused { // no steps here: show them as recorded on a Hopper
		rec, err := env.Recorded(ID)
		if err != nil {
			return env.NoRecording(err)
		}
		show.Note(show.Info, "Steps 7 and 8, as recorded on a Hopper GPU: "+rec.Receipt.String())
		run = rec
		ConvTable(run).Display()
	}
	return Lesson.ShowFigures(run, "08_conv")
}

// Accuracy shows the float32 case: the split and TF32 beside cuBLAS fp32 and TF32 and lesson 03's
// split, each with its error against float64; and the split on lesson 03's awkward shapes.
func Accuracy(env *lab.Env) error {
	run, err := env.ShownOrNil(Lesson)
	if run == nil {
		return err
	}
	AccurateTable(run).Display()
	AwkwardTable(run).Display()
	return nil
}

// Charts shows the throughput per step, the sweep and the awkward shapes.
func Charts(env *lab.Env) error {
	run, err := env.ShownOrNil(Lesson)
	if run == nil {
		return err
	}
	if err := Lesson.ShowFigures(run, "08_tflops", "08_sweep"); err != nil {
		return err
	}
	SweepTable(run).Display()
	ShapesTable(run).Display()
	return nil
}

// Limits shows which shapes each step takes, decided before any launch on this GPU.
func Limits(env *lab.Env) error {
	shapes := []matmul.Shape{Article, {M: 1000, N: 3000, K: 776}, {M: 4096, N: 4096, K: 4100}, {M: 1, N: 8, K: 8}}
	t := show.Table{Title: "Which step takes which shape (each plan decides before anything runs)", Header: []string{"step"}}
	for _, s := range shapes {
		t.Header = append(t.Header, s.String())
	}
	d := env.Device()
	if NeedHopper("", d) != nil {
		h100, _ := gpu.LookupProfile("h100")
		d = h100.Device()
		t.Title += ", on an H100 (this GPU refuses every step)"
	}
	for _, st := range append(append([]Step{}, Steps...), Accurate...) {
		row := []string{st.Name}
		for _, s := range shapes {
			_, err := st.Plan(s, d)
			row = append(row, planCell(st, err, "takes it"))
		}
		t.Rows = append(t.Rows, row)
	}
	t.Display()
	layers := []conv.Shape{conv.Deep, TryConvShape, {N: 1, C: 3, H: 224, W: 224, K: 64, R: 7, S: 1, P: 3}, conv.AlexNet}
	ct := show.Table{Title: "Which convolution step takes which layer", Header: []string{"step"}}
	for _, s := range layers {
		ct.Header = append(ct.Header, s.Short())
	}
	for _, st := range AllConvs() {
		row := []string{st.Name}
		for _, s := range layers {
			pl, err := st.PlanConv(s, d)
			row = append(row, planCell(st, err, fmt.Sprintf("takes it: tiles of %d x %d pixels, %d k tiles each", pl.BW, ConvPixels/max(1, pl.BW), pl.Inner.R*pl.Inner.R*pl.CBlocks)))
		}
		ct.Rows = append(ct.Rows, row)
	}
	ct.Display()
	return nil
}

// planCell is a Limits cell: the plan's refusal without the step's name, or takes when it took the
// shape.
func planCell(st Step, err error, takes string) string {
	if err != nil {
		return "refuses: " + strings.TrimPrefix(err.Error(), "hopper "+st.Name+": ")
	}
	return takes
}

// Reports shows the compile reports of the run.
func Reports(env *lab.Env) error {
	return env.ShowTable(Lesson, func(run *record.Run) show.Table {
		return show.Reports("Compile reports at 4096^3 (fp16)", stepReports(run))
	})
}

// ShowTargets shows the targets table of the run.
func ShowTargets(env *lab.Env) error {
	return env.ShowTable(Lesson, Targets)
}

// product is a problem a step runs on: 16-bit (Problem) for steps 1-4, float32 (AccurateProblem)
// for the split.
type product interface {
	Check(st Step, code string) (check.Result, error)
	Measure(caseName string, st Step, code string) (record.Record, error)
	Free()
	What() string // the elements a check compares
}

// newProduct draws the problem of shape s that st runs on.
func newProduct(env *lab.Env, st Step, s matmul.Shape, seed uint64) (product, error) {
	if st.Products != "" {
		return NewAccurateProblem(env, s, seed)
	}
	return NewProblem(env, s, FP16, seed)
}

// Trial is a step as a Profile cell runs it (lab.Trial): code in place of the step's file (same
// kernel name and parameters), compiled for compute_90a, then (on a Hopper GPU) checked against
// float64 on every output of the small problem and on the sample of the lesson's, and timed on the
// lesson's, as Try does (TryShape and 4096^3, or TryConvShape and the deep layer for a convolution).
func Trial(env *lab.Env, step string) (lab.Trial, error) {
	st, err := StepByName(step)
	if err != nil {
		return lab.Trial{}, err
	}
	if err := NeedHopper(st.Name, env.Device()); err != nil {
		return lab.Trial{}, err
	}
	return lab.Trial{Step: st.Name, Lesson: ID,
		Compile: func(code string) ([]record.KernelReport, error) {
			src, err := st.Source(code)
			if err != nil {
				return nil, err
			}
			prog, err := env.BuildWith(src, st.Options(FP16, env.Device()), st.Kernel)
			if err != nil {
				return nil, err
			}
			cfg, err := st.headline(env.Device())
			if err != nil {
				return nil, err
			}
			return []record.KernelReport{prog.Report(st.Kernel, cfg.Block.Count(), cfg.SharedBytes)}, nil
		},
		Measure: func(code string) ([]record.Record, error) { return trialMeasure(env, st, code) },
		Recorded: func(run *record.Run) []record.Record {
			c := FP16
			switch {
			case st.Conv:
				c = ConvCase
			case st.Products != "":
				c = Float32
			}
			if r, ok := run.Find(c, st.Name, 0); ok {
				return []record.Record{r}
			}
			return nil
		},
	}, nil
}

// trialMeasure is Trial's check and timing: every output of the small problem, then the sample of
// the lesson's, which it also times. A wrong result is an error naming the problem.
func trialMeasure(env *lab.Env, st Step, code string) ([]record.Record, error) {
	open := func(i int) (tryProblem, error) {
		if st.Conv {
			s, seed, checked := TryConvShape, uint64(31), 0
			if i == 1 {
				s, seed, checked = conv.Deep, 32, conv.CheckCount(true)
			}
			p, err := NewConvProblem(env, s, seed, checked)
			return tryLayer{p}, err
		}
		s := [2]matmul.Shape{TryShape, Article}[i]
		if _, err := st.Plan(s, env.Device()); err != nil {
			return nil, nil // a shape the step does not take
		}
		p, err := newProduct(env, st, s, 31)
		return tryProduct{p}, err
	}
	for i := 0; i < 2; i++ {
		p, err := open(i)
		if err != nil {
			return nil, err
		}
		if p == nil {
			continue
		}
		if i == 1 {
			recs, err := p.measure(st, code)
			p.Free()
			return recs, err
		}
		res, err := p.check(st, code)
		what := p.What()
		p.Free()
		if err != nil {
			return nil, err
		}
		if !res.OK {
			small := TryShape.String()
			if st.Conv {
				small = TryConvShape.String()
			}
			return nil, fmt.Errorf("hopper %s on %s (%s): %w", st.Name, small, what, res.Err())
		}
	}
	return nil, fmt.Errorf("hopper %s: it takes neither %v nor %v", st.Name, TryShape, Article)
}

// Profile runs the original step once under Nsight Compute, and the reader's code once more when
// code is not empty (lab.Env.Profile), each in a child process, with the sections and metrics that
// answer the lesson's question (the tensor pipe's use by wgmma, and what TMA loaded), and shows
// both profiles side by side and their warp stall reasons: Try's cell with Try replaced by
// Profile. Without a Hopper GPU, or where this NVRTC cannot compile for compute_90a, it says so and
// shows the recorded profile.
func Profile(env *lab.Env, step, code string) error {
	t, err := Trial(env, step)
	if lab.IsRefusal(err) { // not a Hopper: the need, then the recorded Hopper profile
		lab.ShowRefusal(err)
		return env.ShowProfile(ID)
	}
	if err != nil {
		return err
	}
	err = env.Profile(t, code)
	if unbuildable(err) {
		show.Note(show.Info, "Not compiled: "+err.Error())
		return env.ShowProfile(ID)
	}
	return err
}

package reduce

import (
	"fmt"
	"slices"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
	kr "github.com/cudalessons/cudalessons/kernels/reduce"
)

// Sections of the lesson, each runnable alone (a notebook cell runs one).
const (
	SecSoftmax   = "softmax"
	SecLayerNorm = "layernorm"
)

// Sections are the lesson's parts, in order.
var Sections = []string{SecSoftmax, SecLayerNorm}

// The cases (record.Record.Case) of a run.
const (
	CaseSoftmax      = "softmax"
	CaseSoftmax16    = "softmax 16-bit"
	CaseShortRows    = "softmax short rows"
	CaseSoftmaxSweep = "softmax sweep"
	CaseLongRows     = "softmax long rows"
	CaseZeros        = "zeros check"
	CaseLN           = "layernorm"
	CaseLNBackward   = "layernorm backward"
	CaseLNFwdBwd     = "layernorm forward+backward"
	CaseStability    = "stability"
	CaseLNSweep      = "layernorm sweep"
)

// SoftmaxTotal is the fixed number of elements of the softmax sweep: the article's 4096 x 65536.
const SoftmaxTotal = SoftmaxRows * SoftmaxCols

// ShortRows is the short-row case: 65536 rows of 128.
var ShortRows = [2]int{65536, 128}

// SoftmaxSweep are the row lengths of the sweep at about SoftmaxTotal elements (rows =
// SoftmaxTotal / cols, rounded down): powers of two from 1024 to 1,048,576, KernelBench's 393216,
// and lengths off every multiple of 4 (GPT-2's vocabulary of 50257, a million and three).
func SoftmaxSweep(quick bool) []int {
	if quick {
		return []int{1024, 65536, 262144, 393216, 1048576}
	}
	return []int{1024, 4096, 16384, 50257, 65536, 262144, 393216, 1000003, 1048576}
}

// LongRows is KernelBench's softmax problem (level 1, problem 23, as its repository has it today):
// 4096 rows of 393216 floats, 6.4 GB in and 6.4 GB out.
var LongRows = [2]int{4096, 393216}

// longRowSteps are the steps of the long-row case: the ones that take rows this long (by their
// place in SoftmaxSteps, as sweepSteps).
var longRowSteps = []int{4, 8, 9, 10, 11}

// LNShortStable is the (N, M) of step 5's stability run (mean 1000, std 0.1): step 5 holds a
// sample on chip, so it does not take the article's shape.
var LNShortStable = [2]int{256, 16384}

// LNShortStableOn is LNShortStable on device d: the same elements in samples short enough for
// one block's shared memory there (M = 8192 on a T4's 64 KiB, whose usable 63 KiB misses 16384).
func LNShortStableOn(d gpu.DeviceInfo) [2]int {
	n, m := LNShortStable[0], LNShortStable[1]
	for m > WarpRowMax && m > OnChipMax(d) {
		m /= 2
		n *= 2
	}
	return [2]int{n, m}
}

// StepChecks checks every step of both ladders on d, each at the shape the run measures it at:
// the softmax steps at (4096, 65536) (step 6 at the short rows, step 7 in half), the layer norm
// steps at (16, 64*256*256) (step 5 at its stability shape). The sources' needs come first (the
// cluster step needs 9.0, the grid-resident step 8.0), then the plans (shared memory, SMs).
func StepChecks(d gpu.DeviceInfo) []lab.StepCheck {
	var out []lab.StepCheck
	for i, s := range SoftmaxSteps {
		rows, cols, dt := SoftmaxRows, SoftmaxCols, F32
		switch i {
		case 5:
			rows, cols = ShortRows[0], ShortRows[1]
		case 6:
			dt = F16
		}
		in := SoftmaxInput{DType: dt, Rows: rows, Cols: cols, Aligned: true, SameOffset: true, Device: d}
		plan, _ := PlanSoftmax(s, in)
		c := lab.CheckStep(kr.Kernels, s.Name, s.File, plan.Defines, d, func() error {
			_, err := PlanSoftmax(s, in)
			return err
		})
		if !c.Runs() && c.Instead == "" && i == 4 {
			c.Instead = SoftmaxSteps[3].Name // the online step: x read twice, any row length
		}
		if !c.Runs() && c.Instead == "" && (i == 7 || i == 8 || i == 10) {
			c.Instead = SoftmaxSteps[9].Name // the split row: x read twice, no clusters needed
		}
		out = append(out, c)
	}
	for i, s := range LNSteps {
		n, m := LNSamples, LNSize
		if i == 4 {
			st := LNShortStableOn(d)
			n, m = st[0], st[1]
		}
		c := lab.CheckStep(kr.Kernels, s.Name, s.File, nil, d, func() error {
			_, err := PlanLayerNorm(d, s, n, m, true)
			return err
		})
		if !c.Runs() && i == 5 {
			c.Instead = LNSteps[3].Name // what the op and the run fall back to: x read twice
		}
		out = append(out, c)
	}
	return out
}

// stepChecks are StepChecks with the stand-ins filled (Lesson.StepsOn, without the initialisation
// cycle Run -> Lesson -> Run).
func stepChecks(d gpu.DeviceInfo) []lab.StepCheck { return lab.Lesson{Steps: StepChecks}.StepsOn(d) }

// RefusedOn are the steps (of both ladders) d cannot run, by name.
func RefusedOn(d gpu.DeviceInfo) map[string]lab.StepCheck {
	return lab.Lesson{Steps: StepChecks}.RefusedOn(d)
}

// addRefused adds the refused record of each step of names that d cannot run, in ladder order.
func addRefused(run *record.Run, d gpu.DeviceInfo, names []string) {
	for _, c := range stepChecks(d) {
		if !c.Runs() && slices.Contains(names, c.Step) {
			run.Add(lab.RefusedRecord(c))
		}
	}
}

func softmaxNames() []string {
	var out []string
	for _, s := range SoftmaxSteps {
		out = append(out, s.Name)
	}
	return out
}

func lnNames() []string {
	var out []string
	for _, s := range LNSteps {
		out = append(out, s.Name)
	}
	return out
}

// LNSweepTotal is the fixed number of elements of the layer norm sweep (N = total / M).
const LNSweepTotal = 1 << 25

// LNSweep are the normalised sizes of the layer norm sweep.
func LNSweep(quick bool) []int {
	if quick {
		return []int{1024, 1 << 22}
	}
	return []int{1024, 4096, 16384, 1 << 18, 1 << 22}
}

// sweepSteps are the softmax steps of the sweep, by their place in SoftmaxSteps (1-based: 9 is
// step 8b, 10 is step 9, 11 is step 11); step 6 only where it applies, and a step that refuses a
// length (3 and 5 need multiples of 4 and step 5 rows it can hold) is skipped there.
var sweepSteps = []int{2, 3, 4, 5, 8, 9, 10, 11}

// Run measures the whole lesson.
func Run(env *lab.Env, quick bool) (*record.Run, error) {
	run := env.NewRun(ID)
	for _, sec := range Sections {
		part, err := RunSection(env, sec, quick)
		if err != nil {
			return nil, err
		}
		run.Merge(part)
	}
	return run, nil
}

// RunSection measures one section ("softmax" or "layernorm").
func RunSection(env *lab.Env, section string, quick bool) (*record.Run, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("lesson %s: measuring needs a GPU (%s)", ID, env.Mode)
	}
	run := env.NewRun(ID)
	switch section {
	case SecSoftmax:
		return run, runSoftmax(env, run, quick)
	case SecLayerNorm:
		return run, runLayerNorm(env, run, quick)
	}
	return nil, fmt.Errorf("lesson %s: no section %q (sections: %v)", ID, section, Sections)
}

// ZerosCheck is the article's correctness hole, on the CPU: an all-zero output for rows of cols
// random values, judged by KernelBench's allclose(atol=rtol=1e-2) and by this lesson's float32 check.
func ZerosCheck(rows, cols int, seed uint64) (kernelBench, ours check.Result) {
	x := Uniform(F32, rows*cols, -4, 4, seed)
	var want []float64
	for r := 0; r < rows; r++ {
		want = append(want, SoftmaxRow(x[r*cols:(r+1)*cols])...)
	}
	zeros := make([]float64, len(want))
	return check.Compare(zeros, want, KernelBench), check.Compare(zeros, want, check.FP32)
}

func zerosRecords(run *record.Run) {
	kb, ours := ZerosCheck(8, SoftmaxCols, 5)
	shp := shape(8, SoftmaxCols)
	run.Add(record.Record{Case: CaseZeros, Variant: "KernelBench allclose(atol=rtol=1e-2)", Kind: "reference", DType: "float32", Shape: shp,
		RelL2: kb.RelL2, MaxAbs: kb.MaxAbs, Correct: kb.OK, Tol: kb.Tol.Name, Note: "an all-zero output, judged on the CPU"})
	run.Add(record.Record{Case: CaseZeros, Variant: "this lesson's check (fp32)", Kind: "reference", DType: "float32", Shape: shp,
		RelL2: ours.RelL2, MaxAbs: ours.MaxAbs, Correct: ours.OK, Tol: ours.Tol.Name, Note: "an all-zero output, judged on the CPU"})
}

func stepByNumber(n int) SoftmaxStep { return SoftmaxSteps[n-1] }

func runSoftmax(env *lab.Env, run *record.Run, quick bool) error {
	sweep, article := SoftmaxSweep(quick), articleSteps()
	prog := show.NewProgress("lesson 04: softmax", len(article)+len(sweep)*(len(sweepSteps)+1)+len(longRowSteps)+5+2+1)
	defer prog.Done()
	run.Add(env.CopyRecord(CaseSoftmax))
	zerosRecords(run)
	refused := RefusedOn(env.Device())
	skip := func(s SoftmaxStep) bool { _, ok := refused[s.Name]; return ok }
	p, err := NewSoftmaxProblem(env, F32, SoftmaxRows, SoftmaxCols, 1, 0)
	if err != nil {
		return err
	}
	defer p.Free()
	for _, s := range article {
		if skip(s) {
			prog.Step(s.Name + ": refused on this GPU")
			continue
		}
		rec, err := p.Measure(CaseSoftmax, s, "", "")
		if err != nil {
			return err
		}
		run.Add(rec)
		if _, plan, pr, err := p.Launcher(s, ""); err == nil {
			run.Kernels = append(run.Kernels, pr.Report(plan.Kernel, plan.Block, plan.Shared))
		}
		prog.Step(s.Name)
	}
	for _, cols := range sweep {
		q, err := p.Reshape(SoftmaxTotal/cols, cols)
		if err != nil {
			return err
		}
		if err := measureSweep(q, run, prog, skip); err != nil {
			return err
		}
	}
	p.Free()
	if err := measureLongRows(env, run, prog, skip); err != nil {
		return err
	}
	short, err := NewSoftmaxProblem(env, F32, ShortRows[0], ShortRows[1], 3, 0)
	if err != nil {
		return err
	}
	for _, n := range []int{2, 3, 4, 5, 6} {
		if skip(stepByNumber(n)) {
			prog.Step(stepByNumber(n).Name + ": refused on this GPU")
			continue
		}
		rec, err := short.Measure(CaseShortRows, stepByNumber(n), "", "")
		if err != nil {
			short.Free()
			return err
		}
		run.Add(rec)
		if n == 6 {
			if _, plan, pr, err := short.Launcher(stepByNumber(6), ""); err == nil {
				run.Kernels = append(run.Kernels, pr.Report(plan.Kernel, plan.Block, 0))
			}
		}
		prog.Step(fmt.Sprintf("short rows %s", stepByNumber(n).Name))
	}
	short.Free()
	for _, d := range []DType{F16, BF16} {
		if skip(SoftmaxSteps[6]) {
			break
		}
		h, err := NewSoftmaxProblem(env, d, SoftmaxRows, SoftmaxCols, 4, 0)
		if err != nil {
			return err
		}
		rec, err := h.Measure(CaseSoftmax16, SoftmaxSteps[6], "", "")
		if err == nil && d == F16 {
			if _, plan, pr, err := h.Launcher(SoftmaxSteps[6], ""); err == nil {
				run.Kernels = append(run.Kernels, pr.Report(plan.Kernel, plan.Block, 0))
			}
		}
		h.Free()
		if err != nil {
			return err
		}
		run.Add(rec)
		prog.Step("step 7 " + string(d))
	}
	cases := []SoftmaxCase{{CaseSoftmax, SoftmaxRows, SoftmaxCols, F32, true}, {CaseSoftmax16, SoftmaxRows, SoftmaxCols, F16, true},
		{CaseSoftmax16, SoftmaxRows, SoftmaxCols, BF16, true}, {CaseShortRows, ShortRows[0], ShortRows[1], F32, true},
		{CaseLongRows, LongRows[0], LongRows[1], F32, true}}
	for _, cols := range sweep {
		// torch.compile only at the article's row length (a compilation per shape); eager everywhere.
		cases = append(cases, SoftmaxCase{CaseSoftmaxSweep, SoftmaxTotal / cols, cols, F32, cols == SoftmaxCols})
	}
	TorchBaselines(env, run, cases, nil) // without PyTorch: an "unavailable" record, shown in the tables
	prog.Step("PyTorch")
	addRefused(run, env.Device(), softmaxNames())
	return nil
}

// articleSteps are the softmax steps measured at the article's (4096, 65536): every float32 step
// but step 6, which runs at the short rows (step 7 runs in 16 bits).
func articleSteps() []SoftmaxStep {
	var out []SoftmaxStep
	for _, s := range SoftmaxSteps {
		if slices.Contains(s.DTypes, F32) && s.Name != SoftmaxSteps[5].Name {
			out = append(out, s)
		}
	}
	return out
}

// measureSweep measures the sweep's steps on one row length: step 6 only up to its limit, and a
// step whose plan refuses the length (or that this GPU refuses) is left out.
func measureSweep(q *SoftmaxProblem, run *record.Run, prog *show.Progress, skip func(SoftmaxStep) bool) error {
	defer q.Free() // a view: frees only the scratch of step 9
	steps := append([]int{}, sweepSteps...)
	if q.Cols <= WarpRowMaxCols {
		steps = append(steps, 6)
	}
	for _, n := range steps {
		s := stepByNumber(n)
		if _, err := q.Plan(s); skip(s) || err != nil {
			prog.Step(fmt.Sprintf("%s cols=%d: refused", s.Name, q.Cols))
			continue
		}
		rec, err := q.Measure(CaseSoftmaxSweep, s, "", "")
		if err != nil {
			return err
		}
		run.Add(rec)
		prog.Step(fmt.Sprintf("%s cols=%d", s.Name, q.Cols))
	}
	return nil
}

// measureLongRows measures the steps that take any length on KernelBench's 4096 x 393216.
// On a GPU without room for x and y (12.9 GB and a margin) it records why instead.
func measureLongRows(env *lab.Env, run *record.Run, prog *show.Progress, skip func(SoftmaxStep) bool) error {
	need := SoftmaxWork(F32, LongRows[0], LongRows[1]).Bytes + 256<<20
	if free, _, err := env.Session.MemInfo(); err == nil && float64(free) < need {
		why := fmt.Sprintf("x and y need %.1f GB of device memory with a margin, %.1f GB free on %s", need/1e9, float64(free)/1e9, env.Session.Device.Name)
		run.Add(record.Record{Case: CaseLongRows, Variant: "not measured", Kind: "skipped", Shape: shape(LongRows[0], LongRows[1]), Note: why})
		prog.Step("long rows: not measured: " + why)
		return nil
	}
	p, err := NewSoftmaxProblem(env, F32, LongRows[0], LongRows[1], 23, 0)
	if err != nil {
		return fmt.Errorf("softmax long rows: %w", err)
	}
	defer p.Free()
	for _, n := range longRowSteps {
		s := stepByNumber(n)
		if _, err := p.Plan(s); skip(s) || err != nil {
			prog.Step(s.Name + " long rows: refused")
			continue
		}
		rec, err := p.Measure(CaseLongRows, s, "", "")
		if err != nil {
			return err
		}
		run.Add(rec)
		prog.Step(s.Name + " long rows")
	}
	return nil
}

func runLayerNorm(env *lab.Env, run *record.Run, quick bool) error {
	sweep := LNSweep(quick)
	prog := show.NewProgress("lesson 04: layer norm", len(LNSteps)+1+len(LNSteps)+len(sweep)*(len(LNSteps)-1)+1)
	defer prog.Done()
	run.Add(env.CopyRecord(CaseLN))
	refused := RefusedOn(env.Device())
	skip := func(s LNStep) bool { _, ok := refused[s.Name]; return ok }
	p, err := NewLNProblem(env, LNSamples, LNSize, 1, false, true, 0)
	if err != nil {
		return err
	}
	defer p.Free()
	for _, s := range LNSteps {
		if skip(s) {
			prog.Step(s.Name + ": refused on this GPU")
			continue
		}
		rec, err := p.Measure(CaseLN, s, "", "", false)
		if IsRefusal(err) { // step 5: a 16 MB sample does not fit on one SM
			prog.Step(s.Name + ": does not take the shape")
			continue
		}
		if err != nil {
			return err
		}
		run.Add(rec)
		prog.Step(s.Name)
	}
	if err := measureBackward(env, run, p); err != nil {
		return err
	}
	prog.Step("backward")
	p.Free()

	q, err := NewLNProblem(env, LNSamples, LNSize, 2, true, false, 0)
	if err != nil {
		return err
	}
	for _, s := range LNSteps[1:] {
		if skip(s) {
			prog.Step("mean 1000: " + s.Name + ": refused on this GPU")
			continue
		}
		rec, err := q.Measure(CaseStability, s, "", "", true)
		if IsRefusal(err) {
			prog.Step("mean 1000: " + s.Name + ": does not take the shape")
			continue
		}
		if err != nil {
			q.Free()
			return err
		}
		rec.Note = "x: mean 1000, std 0.1; " + rec.Note
		run.Add(rec)
		prog.Step("mean 1000: " + s.Name)
	}
	q.Free()
	// Step 5 holds a sample on chip: its stability is shown on short samples.
	if !skip(LNSteps[4]) {
		st := LNShortStableOn(env.Device())
		sq, err := NewLNProblem(env, st[0], st[1], 3, true, false, 0)
		if err != nil {
			return err
		}
		rec, err := sq.Measure(CaseStability, LNSteps[4], "", "", true)
		sq.Free()
		if err != nil {
			return err
		}
		rec.Note = "x: mean 1000, std 0.1; " + rec.Note
		run.Add(rec)
	}
	prog.Step("mean 1000: " + LNSteps[4].Name)
	for _, m := range sweep {
		n := LNSweepTotal / m
		sp, err := NewLNProblem(env, n, m, uint64(m), false, false, 0)
		if err != nil {
			return err
		}
		for _, s := range LNSteps[1:] {
			if skip(s) {
				prog.Step(fmt.Sprintf("%s M=%d: refused on this GPU", s.Name, m))
				continue
			}
			rec, err := sp.Measure(CaseLNSweep, s, "", "", false)
			if IsRefusal(err) {
				prog.Step(fmt.Sprintf("%s M=%d: does not take the shape", s.Name, m))
				continue
			}
			if err != nil {
				sp.Free()
				return err
			}
			run.Add(rec)
			prog.Step(fmt.Sprintf("%s M=%d", s.Name, m))
		}
		sp.Free()
	}
	cases := []LNCase{{CaseLN, LNSamples, LNDims, true, true}}
	for _, m := range sweep {
		cases = append(cases, LNCase{CaseLNSweep, LNSweepTotal / m, []int{m}, false, m == 1<<22})
	}
	TorchBaselines(env, run, nil, cases)
	prog.Step("PyTorch")
	addRefused(run, env.Device(), lnNames())
	return nil
}

// measureBackward checks the backward and times it alone and with the forward (step 4).
func measureBackward(env *lab.Env, run *record.Run, p *LNProblem) error {
	res, err := p.CheckBackward("")
	if err != nil {
		return err
	}
	if !res.OK {
		return fmt.Errorf("layer norm backward: %w", res.Err())
	}
	shp := fmt.Sprintf("(%d, %d)", p.N, p.M)
	bwd, plan, err := p.BackwardLauncher("")
	if err != nil {
		return err
	}
	fwd, _, err := p.Launcher(LNSteps[3], "")
	if err != nil {
		return err
	}
	note := fmt.Sprintf("P = %d; dx, dw, db checked (%s)", plan.P, p.Checked())
	rec := record.Record{Case: CaseLNBackward, Variant: "ours", Kind: "kernel", DType: "float32", Shape: shp, Size: int64(p.M),
		RelL2: res.RelL2, MaxAbs: res.MaxAbs, Correct: true, Tol: res.Tol.Name, Note: note}
	if rec, err = env.Measure(rec, LNBackwardWork(p.N, p.M), bwd); err != nil {
		return err
	}
	run.Add(rec)
	fb := record.Record{Case: CaseLNFwdBwd, Variant: "ours (step 4 + backward)", Kind: "kernel", DType: "float32", Shape: shp, Size: int64(p.M),
		RelL2: res.RelL2, MaxAbs: res.MaxAbs, Correct: true, Tol: res.Tol.Name, Note: note}
	fb, err = env.Measure(fb, LNForwardBackwardWork(p.N, p.M), func() error {
		if err := fwd(); err != nil {
			return err
		}
		return bwd()
	})
	if err != nil {
		return err
	}
	run.Add(fb)
	return nil
}

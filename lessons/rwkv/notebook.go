package rwkv

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// The notebook's cells call these: each shows one thing and keeps the cell a line long.

// Intro shows the problem: the shape, the work and the compute floor, and proves the CPU references
// on a small shape (forward against the definition, backward against finite differences).
func Intro(env *lab.Env) error {
	s := ArticleShape
	peak := env.Receipt.PeakGFLOPS
	floor := "unknown (no device facts)"
	if peak > 0 {
		floor = bench.FormatMS(s.ForwardFLOPs() / (peak * 1e9) * 1e3)
	}
	t := show.Table{Title: "The article's problem", Header: []string{"quantity", "value"}, Rows: [][]string{
		{"shape", s.String() + fmt.Sprintf(", eps = %g, w and k uniform in [0, 1)", Eps)},
		{"out, k", fmt.Sprintf("%d floats each (%.1f MiB)", s.Len(), float64(4*s.Len())/(1<<20))},
		{"forward work", fmt.Sprintf("%.3g G multiply-adds = %.1f GFLOP", s.MACs()/1e9, s.ForwardFLOPs()/1e9)},
		{"backward work (dk and dw)", fmt.Sprintf("%.1f GFLOP", s.BackwardFLOPs()/1e9)},
		{"minimum DRAM traffic, forward", fmt.Sprintf("%.0f MB: %.0f FLOP per byte, compute-bound", s.ForwardBytes()/1e6, s.ForwardFLOPs()/s.ForwardBytes())},
		{"FP32 FMA peak of " + deviceName(env), fmt.Sprintf("%.1f TFLOP/s: the forward cannot beat %s on CUDA cores", peak/1e3, floor)},
		{"TF32 tensor-core peak", tensorPeak(env.Receipt, "tf32")},
	}}
	t.Display()
	small := Shape{B: 2, C: 3, T: 9}
	w, k := Inputs(small, 1)
	g := Upstream(small, 1)
	err := ProveReferences(small, w, k, g)
	if err != nil {
		return err
	}
	show.Note(show.Success, fmt.Sprintf("CPU references proven on %v: the forward equals the definition, and dk, dw equal central finite differences of sum(g * out) for every element.", small))
	return nil
}

// tensorPeak says a tensor-core format's datasheet peak on the receipt's GPU, the ceiling of the
// steps that use it, or why it is not known.
func tensorPeak(r record.Receipt, format string) string {
	p := r.PeakFor(format)
	if p.GFLOPS <= 0 {
		return "not known: " + p.Missing
	}
	return fmt.Sprintf("%.1f TFLOP/s (datasheet, dense): the ceiling of the %s steps, against which they are measured", p.GFLOPS/1e3, strings.ToUpper(format))
}

func deviceName(env *lab.Env) string {
	if env.Receipt.Device.Name != "" {
		return env.Receipt.Device.Name
	}
	return "the recorded GPU"
}

// ProveReferences checks the float64 references on a small shape: the forward against the
// definition summed naively (to 1e-12), and dk, dw against central finite differences of
// L = sum(g * out), which is bilinear in (w, k), so the difference is exact up to rounding (to 1e-8
// relative). The tests run it on several shapes; notebook 01 runs it once.
func ProveReferences(s Shape, w32, k32, g32 []float32) error {
	w, k, g := check.Float64s(w32), check.Float64s(k32), check.Float64s(g32)
	want := naiveForward(s, w, k, Eps)
	for i, got := range Forward(s, w, k, Eps) {
		if math.Abs(got-want[i]) > 1e-12 {
			return fmt.Errorf("%v: forward reference %.15g differs from the definition %.15g at %d", s, got, want[i], i)
		}
	}
	dk, dw := BackwardDK(s, w, g), BackwardDW(s, k, g)
	const h = 1e-3
	fd := func(x []float64, i int) float64 {
		old := x[i]
		x[i] = old + h
		lp := Loss(s, w, k, g, Eps)
		x[i] = old - h
		lm := Loss(s, w, k, g, Eps)
		x[i] = old
		return (lp - lm) / (2 * h)
	}
	for _, grad := range []struct {
		name string
		x, d []float64
	}{{"dk", k, dk}, {"dw", w, dw}} {
		for i := range grad.x {
			if want := fd(grad.x, i); math.Abs(grad.d[i]-want) > 1e-8*math.Max(1, math.Abs(want)) {
				return fmt.Errorf("%v: %s reference %.9g differs from the finite difference %.9g at %d", s, grad.name, grad.d[i], want, i)
			}
		}
	}
	return nil
}

// naiveForward is the definition written as directly as possible, to prove the optimised reference.
func naiveForward(s Shape, w, k []float64, eps float64) []float64 {
	out := make([]float64, s.Len())
	for b := 0; b < s.B; b++ {
		for c := 0; c < s.C; c++ {
			for t := 0; t < s.T; t++ {
				sum := eps
				for u := 0; u <= t; u++ {
					sum += w[c*s.T+(s.T-1)-(t-u)] * k[(b*s.C+c)*s.T+u]
				}
				out[(b*s.C+c)*s.T+t] = sum
			}
		}
	}
	return out
}

// Overview measures the whole lesson (GPU mode, under a minute on an H100) or loads the recorded run, keeps
// it for the later cells, and shows the forward table and the article's table.
func Overview(env *lab.Env) error {
	run, err := env.Results(Lesson, false)
	if err != nil {
		if !env.GPU() {
			show.Note(show.Info, "No recorded GPU run of this lesson is available yet ("+err.Error()+").")
			return nil
		}
		return err
	}
	if !env.GPU() {
		show.Note(show.Info, "Recorded results: "+run.Receipt.String())
	} else if err := env.Keep(run); err != nil {
		return err
	}
	ForwardTable(run).Display()
	ArticleTable(run).Display()
	if t, ok := lab.RefusedTable(run); ok {
		t.Display()
	}
	if x, ok := run.Find("crosscheck", Torch, 0); ok {
		kind := show.Success
		if !x.Correct {
			kind = show.Warning
		}
		show.Note(kind, fmt.Sprintf("Cross-check: PyTorch's forward on our inputs (%s) against our float64 reference: rel L2 %.1e, max abs %.1e (%s tolerance) — %v.",
			x.Shape, x.RelL2, x.MaxAbs, x.Tol, map[bool]string{true: "they agree", false: "they DISAGREE"}[x.Correct]))
	} else if r, ok := run.Find("forward", Torch, 0); ok && r.MedianMS <= 0 {
		show.Note(show.Warning, "PyTorch column: "+r.Note)
	}
	return nil
}

// Walk shows one step: its source, its compile report at the article's shape, and its line of the
// run (time, speedups over PyTorch and v0, % of the FP32 peak, correctness) beside the article's.
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
	if err := Refusal(st.Name, env.Device()); err != nil {
		return err
	}
	run, rerr := env.Shown(Lesson)
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
		if rep, err = CompileReport(env, st, ArticleShape); err != nil {
			return err
		}
	}
	show.Reports("compile report of "+st.Kernel+" at the article's shape", []record.KernelReport{rep}).Display()
	env.ShowSASSCollapsed(src, compile.Options{Defines: st.Defines})
	if rerr != nil {
		if errors.Is(rerr, lab.ErrNoRecord) {
			return nil
		}
		return rerr
	}
	r, ok := run.Find("forward", st.Name, 0)
	if !ok {
		show.Note(show.Warning, st.Name+" is not in this run.")
		return nil
	}
	var parts []string
	parts = append(parts, fmt.Sprintf("%s: %s (min %s, max %s), %.2f TFLOP/s = %s; %s.",
		st.Name, bench.FormatMS(r.MedianMS), bench.FormatMS(r.MinMS), bench.FormatMS(r.MaxMS), r.GFLOPs/1e3, show.PeakShare(run.Receipt, r), verdictOf(r)))
	if pt := run.Median("forward", Torch); pt > 0 {
		parts = append(parts, fmt.Sprintf("%s faster than PyTorch (%s)", show.Times(pt/r.MedianMS), bench.FormatMS(pt)))
	}
	if v0 := run.Median("forward", "v0 naive"); v0 > 0 {
		parts = append(parts, fmt.Sprintf("%s faster than v0", show.Times(v0/r.MedianMS)))
	}
	if a, ok := articleRow(st.Name); ok && a.Fwd > 0 {
		parts = append(parts, fmt.Sprintf("the article measured %s on a GTX 1070M (%s its PyTorch)", show.MS(a.Fwd), show.Times(94/a.Fwd)))
	}
	kind := show.Success
	if !r.Correct {
		kind = show.Failure
	}
	show.Note(kind, strings.Join(parts, "; ")+". Device: "+r.Device+", "+r.Date+".")
	if st.File == "5_register_tile.cu" {
		TileTable(run).Display()
	}
	return nil
}

// ShowBackward shows the backward table and chart of the run.
func ShowBackward(env *lab.Env) error {
	return env.ShowRun(Lesson, func(run *record.Run) []show.Table {
		return []show.Table{BackwardTable(run)}
	}, "01_backward_time")
}

// Charts shows the forward charts and the T sweep of the last run.
func Charts(env *lab.Env) error {
	run, err := env.ShownOrNil(Lesson)
	if run == nil {
		return err
	}
	if err := Lesson.ShowFigures(run, "01_forward_time", "01_forward_speedup", "01_forward_peak", "01_sweep"); err != nil {
		return err
	}
	SweepTable(run).Display()
	return nil
}

// Reports shows every compile report of the last run (registers, shared memory, occupancy).
func Reports(env *lab.Env) error {
	return env.ShowTable(Lesson, func(run *record.Run) show.Table {
		return show.Reports("Compile reports at the article's shape", shownReports(run))
	})
}

// Targets is the closing table: each target of the lesson, the figure measured, met or not.
func Targets(run *record.Run) show.Table {
	t := show.NewTargets("Targets (article's shape)")
	add := t.Add
	pt, ptb := run.Median("forward", Torch), run.Median("backward", Torch)
	var best, tc record.Record
	for _, r := range run.Select("forward") {
		if r.Kind != "kernel" || !r.Correct || r.MedianMS <= 0 {
			continue
		}
		if r.DType == "float32" && (best.MedianMS == 0 || r.MedianMS < best.MedianMS) {
			best = r
		}
		if r.DType == "tf32" && (tc.MedianMS == 0 || r.MedianMS < tc.MedianMS) {
			tc = r
		}
	}
	add("best exact-FP32 forward >= 40% of the FP32 FMA peak", fmt.Sprintf("%s: %s, %s", best.Variant, show.MS(best.MedianMS), show.Pct(best.PctFLOPs)), best.PctFLOPs >= 40, best.MedianMS > 0)
	add("best exact-FP32 forward >= 8x PyTorch", fmt.Sprintf("%s vs PyTorch %s: %s", best.Variant, show.MS(pt), show.Ratio(pt, best.MedianMS)), pt > 0 && pt/best.MedianMS >= 8, pt > 0 && best.MedianMS > 0)
	add("tensor-core forward >= 25x PyTorch, error reported", fmt.Sprintf("%s: %s, %s; rel L2 %.1e under %s", tc.Variant, show.MS(tc.MedianMS), show.Ratio(pt, tc.MedianMS), tc.RelL2, tc.Tol), pt > 0 && pt/tc.MedianMS >= 25, pt > 0 && tc.MedianMS > 0)
	for _, r := range run.Select("forward") {
		if r.DType == "3xtf32" && r.MedianMS > 0 {
			t.Rows = append(t.Rows, []string{"(beyond the targets) tensor cores with split inputs, 3xTF32",
				fmt.Sprintf("%s: %s, %s PyTorch; rel L2 %.1e under %s", r.Variant, show.MS(r.MedianMS), show.Ratio(pt, r.MedianMS), r.RelL2, r.Tol), "—"})
		}
	}
	var bb record.Record
	for _, r := range run.Select("backward") {
		if r.Kind == "kernel" && r.Correct && r.MedianMS > 0 && (bb.MedianMS == 0 || r.MedianMS < bb.MedianMS) {
			bb = r
		}
	}
	add("best backward >= 20x PyTorch's backward", fmt.Sprintf("%s: %s vs PyTorch %s: %s", bb.Variant, show.MS(bb.MedianMS), show.MS(ptb), show.Ratio(ptb, bb.MedianMS)), ptb > 0 && ptb/bb.MedianMS >= 20, ptb > 0 && bb.MedianMS > 0)
	// Beside the targets: the same figures against torch.compile, what a reader would try first.
	pc, pcb := run.Median("forward", TorchCompile), run.Median("backward", TorchCompile)
	compiled := func(name string, base float64, r record.Record, caseName string) {
		if base <= 0 {
			why := "unavailable"
			if c, ok := run.Find(caseName, TorchCompile, 0); ok && c.Note != "" {
				why = c.Note
			}
			t.Rows = append(t.Rows, []string{name, why, "not measured"})
			return
		}
		add(name, fmt.Sprintf("%s: %s vs torch.compile %s: %s", r.Variant, show.MS(r.MedianMS), show.MS(base), show.Ratio(base, r.MedianMS)), r.MedianMS > 0 && r.MedianMS < base, r.MedianMS > 0)
	}
	compiled("(beside the targets) best exact-FP32 forward faster than torch.compile", pc, best, "forward")
	compiled("(beside the targets) best backward faster than torch.compile's backward", pcb, bb, "fwdbwd")
	markRefused(run, t)
	t.Caption = "Measured: " + run.Receipt.String()
	return t.Table
}

// markRefused says, in a target the run could not judge because the GPU refused every step it is
// about, so ("not measured: refused on this GPU", with the steps) rather than a bare "not measured".
func markRefused(run *record.Run, t *show.Targets) {
	refused := map[string]bool{}
	for _, r := range lab.Refused(run) {
		refused[r.Variant] = true
	}
	about := map[string][]string{} // a target's first words: the steps it is about
	for _, st := range Steps {
		if refused[st.Name] && st.DType == "tf32" {
			about["tensor-core forward"] = append(about["tensor-core forward"], st.Name)
		}
		if refused[st.Name] && st.DType == "float32" {
			about["best exact-FP32 forward"] = append(about["best exact-FP32 forward"], st.Name)
		}
	}
	for _, st := range BackwardSteps {
		if refused[st.Name] {
			about["best backward"] = append(about["best backward"], st.Name)
		}
	}
	for i, row := range t.Rows {
		if row[2] != "not measured" {
			continue
		}
		for prefix, names := range about {
			if strings.HasPrefix(row[0], prefix) {
				t.Rows[i][1] = "refused on this GPU: " + strings.Join(names, ", ")
				t.Rows[i][2] = "not measured: refused on this GPU"
			}
		}
	}
}

// shownReports are the run's compile reports less those of kernels that only refused steps use.
func shownReports(run *record.Run) []record.KernelReport {
	refused := map[string]bool{}
	for _, r := range lab.Refused(run) {
		refused[r.Variant] = true
	}
	if len(refused) == 0 {
		return run.Kernels
	}
	used := map[string]bool{}
	for _, st := range Steps {
		if !refused[st.Name] {
			used[st.Kernel] = true
		}
	}
	for _, st := range BackwardSteps {
		if !refused[st.Name] {
			for _, k := range st.Kernels {
				used[k] = true
			}
		}
	}
	var out []record.KernelReport
	for _, k := range run.Kernels {
		if used[k.Kernel] {
			out = append(out, k)
		}
	}
	return out
}

// ShowTargets displays the targets table of the last run.
func ShowTargets(env *lab.Env) error {
	return env.ShowTable(Lesson, Targets)
}

// Autograd runs the original's training-style loss (r*r - tanh(r)).sum() through the RWKV op as an
// autograd Function (backward_autograd.go). The CPU float64 op is checked against finite differences
// in either mode, and the op's dispatch is shown on shapes the fast steps refuse. In the GPU mode the
// op (NewOp: the fastest steps that take each shape) is checked on those shapes: dw and dk against
// the float64 reference chain, a finite-difference gradcheck on the small ones, and at the
// article's shape on 1024 random rows.
func Autograd(env *lab.Env) error {
	small := Shape{B: 2, C: 3, T: 8}
	cpu, err := GradCheckCPU(small, 5)
	if err != nil {
		return err
	}
	show.Note(show.Outcome(cpu.OK), fmt.Sprintf("gradcheck of the CPU float64 op through the training loss on %v: %v", small, cpu))
	dp, err := DispatchFor(FP32)
	if err != nil {
		return err
	}
	dev := env.Device()
	DispatchTable(dp, dev, DispatchShapes).Display()
	if !env.GPU() {
		show.Note(show.Info, "The GPU op's checks on these shapes need a GPU ("+env.Mode.String()+").")
		return nil
	}
	for i, s := range DispatchShapes {
		rows := 0
		if s == ArticleShape {
			rows = 1024
		}
		op, c, err := NewOp(env, s, FP32)
		if err != nil {
			return err
		}
		op.Free()
		r, err := AutogradCheck(env, s, c.Fwd, c.Bwd, uint64(9+i), rows)
		if err != nil {
			return err
		}
		msg := fmt.Sprintf("%s + %s on %v: dk %s; dw %s (%s)", c.Fwd.Name, c.Bwd.Name, s, r.DK, r.DW, r.Checked)
		if s.Len() <= 1<<12 {
			g, err := GradCheckGPU(env, s, c.Fwd, c.Bwd, uint64(5+i), 64)
			if err != nil {
				return err
			}
			msg += fmt.Sprintf("; finite-difference gradcheck: %v", g)
			if !g.OK {
				r.DK.OK = false
			}
		}
		show.Note(show.Outcome(r.OK()), msg)
	}
	return nil
}

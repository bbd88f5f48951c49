package reduce

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
	kr "github.com/cudalessons/cudalessons/kernels/reduce"
)

// Intro shows the mode and the two numbers of each problem: the minimum traffic and the time it
// takes at the measured (or recorded) copy bandwidth.
func Intro(env *lab.Env) error { return intro(env, true, true) }

// IntroSoftmax is Intro for the softmax notebook: the softmax problems alone.
func IntroSoftmax(env *lab.Env) error { return intro(env, true, false) }

// IntroLayerNorm is Intro for the layer norm notebook: the layer norm problems alone.
func IntroLayerNorm(env *lab.Env) error { return intro(env, false, true) }

func intro(env *lab.Env, softmax, layerNorm bool) error {
	show.Note(show.Info, env.Banner())
	bw := env.Receipt.CopyGBps
	t := show.Table{Title: "The floors: bytes that must move over the copy bandwidth", Header: []string{"problem", "minimum traffic", "floor at the copy bandwidth"}}
	row := func(name string, bytes float64) {
		floor := "needs the copy bandwidth"
		if bw > 0 {
			floor = bench.FormatMS(bytes / (bw * 1e9) * 1e3)
		}
		t.Rows = append(t.Rows, []string{name, fmt.Sprintf("%.0f MB", bytes/1e6), floor})
	}
	if softmax {
		row("softmax (4096, 65536) float32: x once, y once", SoftmaxWork(F32, SoftmaxRows, SoftmaxCols).Bytes)
		row("softmax in half or bfloat16", SoftmaxWork(F16, SoftmaxRows, SoftmaxCols).Bytes)
	}
	if layerNorm {
		row("layer norm (16, 64, 256, 256): x once, y once, w and b once", LNWork(LNSamples, LNSize).Bytes)
		row("layer norm backward: x, dy, w once; dx, dw, db once", LNBackwardWork(LNSamples, LNSize).Bytes)
	}
	t.Caption = fmt.Sprintf("Copy bandwidth %.0f GB/s (%s).", bw, env.Receipt.Device.Name)
	if softmax {
		t.Caption += " Softmax does about 5 FLOPs per element: 1.3 GFLOP, 0.02 ms of FP32 peak."
	}
	t.Caption += " Memory-bound by two orders of magnitude; PyTorch eager and torch.compile are measured beside every step in the tables below."
	t.Display()
	return nil
}

// ShowSource displays one of the lesson's kernel files with line numbers.
func ShowSource(file string) error { return lab.ShowSource(kr.Kernels, file) }

// CompileAll compiles every kernel file of the lesson for the env's architecture (the cluster
// step at every cluster size), one line per file.
func CompileAll(env *lab.Env) error { return compileFiles(env, kr.Files()) }

// CompileSoftmax is CompileAll for the softmax notebook: the softmax files (s*.cu).
func CompileSoftmax(env *lab.Env) error { return compileFiles(env, filesOf("s")) }

// CompileLayerNorm is CompileAll for the layer norm notebook: the layer norm files (l*.cu).
func CompileLayerNorm(env *lab.Env) error { return compileFiles(env, filesOf("l")) }

// filesOf are the lesson's kernel files whose names start with prefix.
func filesOf(prefix string) []string {
	var out []string
	for _, f := range kr.Files() {
		if strings.HasPrefix(f, prefix) {
			out = append(out, f)
		}
	}
	return out
}

func compileFiles(env *lab.Env, files []string) error {
	return env.CompileFiles(kr.Kernels, files, func(f string) [][]string {
		if f != "s5_cluster.cu" {
			return nil
		}
		var defs [][]string
		for c := 1; c <= MaxCluster; c *= 2 {
			defs = append(defs, []string{fmt.Sprintf("CLUSTER=%d", c), fmt.Sprintf("VECS=%d", ClusterVecs)})
		}
		return defs
	})
}

// SectionResults returns the lesson's run for a section's cell: on a GPU the run an earlier cell
// (or the reproduce command, with the same cache folder) kept on this GPU with this method, measured
// now when there is none (the whole lesson, once, then kept for the later cells: each cell is a new
// process); without a GPU the recorded run.
func SectionResults(env *lab.Env, section string, quick bool) (*record.Run, error) {
	return env.Last(Lesson, quick)
}

// Collected is the whole lesson's run for the closing cells (see SectionResults).
func Collected(env *lab.Env, quick bool) (*record.Run, error) {
	return env.Last(Lesson, quick)
}

// ShowSection measures (GPU) or loads (no GPU) one section and shows its tables and charts.
func ShowSection(env *lab.Env, section string, quick bool) error {
	run, err := SectionResults(env, section, quick)
	if err != nil {
		return env.NoRecording(err)
	}
	for _, t := range SectionTables(run, section) {
		t.Display()
	}
	figs, err := SectionFigures(run, section)
	if err != nil {
		return err
	}
	return lab.ShowPlots(figs)
}

// ShowTargets shows the article's table beside this run, the targets and the compile reports.
func ShowTargets(env *lab.Env, quick bool) error { return showTargets(env, "", quick) }

// ShowSectionTargets is ShowTargets for one notebook's section (SecSoftmax or SecLayerNorm): the
// article's table, that section's targets, and the compile reports of its kernels.
func ShowSectionTargets(env *lab.Env, section string, quick bool) error {
	if section != SecSoftmax && section != SecLayerNorm {
		return fmt.Errorf("lesson 04: no section %q (sections: %q, %q)", section, SecSoftmax, SecLayerNorm)
	}
	return showTargets(env, section, quick)
}

func showTargets(env *lab.Env, section string, quick bool) error {
	run, err := Collected(env, quick)
	if err != nil {
		return env.NoRecording(err)
	}
	ArticleTable(run).Display()
	TargetsTableOf(run, section).Display()
	if t, ok := lab.RefusedTable(run); ok {
		t.Display()
	}
	reps := run.Kernels
	if section != "" {
		reps = nil
		for _, r := range run.Kernels {
			if strings.HasPrefix(r.Kernel, "softmax") == (section == SecSoftmax) {
				reps = append(reps, r)
			}
		}
	}
	if len(reps) > 0 {
		show.Reports("Compile reports", reps).Display()
	}
	return nil
}

// ZerosDemo shows, on the CPU, an all-zero softmax output judged by the article's check and by ours.
func ZerosDemo() {
	defer show.Flush() // the cell ends here: wait until the notebook has the output
	t := show.Table{Title: "An all-zero output for 8 rows of 65536: two checks", Header: []string{"check", "max abs error", "rel L2 error", "verdict"}}
	kb, ours := ZerosCheck(8, SoftmaxCols, 5)
	for _, c := range []check.Result{kb, ours} {
		v := "rejected"
		if c.OK {
			v = "PASSES (wrongly)"
		}
		t.Rows = append(t.Rows, []string{c.Tol.Name, fmt.Sprintf("%.2g", c.MaxAbs), fmt.Sprintf("%.2g", c.RelL2), v})
	}
	t.Caption = "Computed here on the CPU: no GPU needed. " + KernelBench.Why + "; ours: " + check.FP32.Why + "."
	t.Display()
}

// VarianceInFloat32 computes, in float32 on the CPU, the variance of xs by the sum of squares
// (E[x^2] - E[x]^2, sequential sums) and by Welford's update, for the stability demonstration.
func VarianceInFloat32(xs []float32) (sumsq, welford float32) {
	var s, q float32
	for _, v := range xs {
		s += v
		q += v * v
	}
	n := float32(len(xs))
	mean := s / n
	sumsq = q/n - mean*mean
	var m, m2 float32
	for i, v := range xs {
		d := v - m
		m += d / float32(i+1)
		m2 += d * (v - m)
	}
	return sumsq, m2 / n
}

// StabilityDemo shows, on the CPU, the variance of 1M values with mean 1000 and standard
// deviation 0.1 computed in float32 both ways, against float64.
func StabilityDemo() {
	defer show.Flush() // the cell ends here: wait until the notebook has the output
	h := float32(0.1 * math.Sqrt(3))
	xs := Uniform(F32, 1<<20, 1000-h, 1000+h, 9)
	var mean, q float64
	for _, v := range xs {
		mean += float64(v)
	}
	mean /= float64(len(xs))
	for _, v := range xs {
		q += (float64(v) - mean) * (float64(v) - mean)
	}
	exact := q / float64(len(xs))
	ss, w := VarianceInFloat32(xs)
	t := show.Table{Title: "Variance of 1M float32 values with mean 1000, std 0.1, computed in float32", Header: []string{"method", "variance", "relative error"}}
	t.Rows = append(t.Rows, []string{"float64 two-pass (reference)", fmt.Sprintf("%.6g", exact), "0"})
	t.Rows = append(t.Rows, []string{"sum of squares, E[x^2] - E[x]^2", fmt.Sprintf("%.6g", ss), fmt.Sprintf("%.3g", math.Abs(float64(ss)-exact)/exact)})
	t.Rows = append(t.Rows, []string{"Welford", fmt.Sprintf("%.6g", w), fmt.Sprintf("%.3g", math.Abs(float64(w)-exact)/exact)})
	t.Caption = "Computed here on the CPU with sequential float32 sums: the GPU kernels' tree sums lose less, but not enough (see the stability table)."
	t.Display()
}

// ProveBackward checks LayerNormBackward against central finite differences of the float64
// forward, for the loss L = sum(r * y) with random r, on every input of a small problem, and
// returns the largest relative error (of dx, dw and db together).
func ProveBackward(N, M int, seed uint64) (float64, error) {
	x := Uniform(F32, N*M, -1, 1, seed)
	w := Uniform(F32, M, 0.5, 1.5, seed+1)
	b := Uniform(F32, M, -0.5, 0.5, seed+2)
	r := Uniform(F32, N*M, -1, 1, seed+3)
	loss := func(x, w, b []float64) float64 {
		var l float64
		for n := 0; n < N; n++ {
			var mean, q float64
			for i := 0; i < M; i++ {
				mean += x[n*M+i]
			}
			mean /= float64(M)
			for i := 0; i < M; i++ {
				q += (x[n*M+i] - mean) * (x[n*M+i] - mean)
			}
			rstd := 1 / math.Sqrt(q/float64(M)+LNEps)
			for i := 0; i < M; i++ {
				l += float64(r[n*M+i]) * ((x[n*M+i]-mean)*rstd*w[i] + b[i])
			}
		}
		return l
	}
	dx, dw, db := LayerNormBackward(x, w, r, N, M, LNEps)
	xs, ws, bs := check.Float64s(x), check.Float64s(w), check.Float64s(b)
	const h = 1e-6
	worst := 0.0
	for _, c := range []struct {
		v    []float64
		grad []float64
	}{{xs, dx}, {ws, dw}, {bs, db}} {
		for i := range c.v {
			old := c.v[i]
			c.v[i] = old + h
			up := loss(xs, ws, bs)
			c.v[i] = old - h
			down := loss(xs, ws, bs)
			c.v[i] = old
			fd := (up - down) / (2 * h)
			e := math.Abs(fd-c.grad[i]) / math.Max(1e-3, math.Abs(fd))
			worst = math.Max(worst, e)
		}
	}
	if worst > 1e-5 {
		return worst, fmt.Errorf("the float64 layer norm backward disagrees with finite differences: max relative error %.3g", worst)
	}
	return worst, nil
}

// ShowBackwardProof runs ProveBackward and says the result.
func ShowBackwardProof() error {
	e, err := ProveBackward(3, 37, 4)
	if err != nil {
		return err
	}
	show.Note(show.Success, fmt.Sprintf("The float64 backward (dx, dw, db) agrees with central finite differences of the float64 forward on every input of a (3, 37) problem: max relative error %.2g. The GPU backward is checked against it.", e))
	return nil
}

// softmaxTryShape is the shape a softmax step is timed at by Try: the article's, or the short rows
// for the warp-per-row step.
func softmaxTryShape(s SoftmaxStep) (rows, cols int) {
	if s.Name == SoftmaxSteps[5].Name {
		return ShortRows[0], ShortRows[1]
	}
	return SoftmaxRows, SoftmaxCols
}

// buildSoftmax compiles code in place of softmax step s's file (the original when empty) as the
// step's plan launches it at its Try shape, and returns the source, the plan and the compile report.
func buildSoftmax(env *lab.Env, s SoftmaxStep, code string) (compile.Source, SoftmaxLaunch, []record.KernelReport, error) {
	rows, cols := softmaxTryShape(s)
	plan, err := PlanSoftmax(s, SoftmaxInput{DType: s.DTypes[0], Rows: rows, Cols: cols, Aligned: true, SameOffset: true, Device: env.Device()})
	if err != nil {
		return compile.Source{}, plan, nil, err
	}
	src, err := kr.Source(s.File)
	if err != nil {
		return src, plan, nil, err
	}
	if code != "" {
		src = compile.Source{Name: "edited_" + s.File, Code: code}
	}
	prog, err := env.BuildWith(src, compile.Options{Defines: plan.Defines}, plan.Kernel)
	if err != nil {
		return src, plan, nil, err
	}
	return src, plan, []record.KernelReport{prog.Report(plan.Kernel, plan.Block, 0)}, nil
}

// trySoftmaxShapes are the shapes an edited softmax step is checked on (those the step takes).
var trySoftmaxShapes = [][3]int{{1, 1, 0}, {3, 5, 0}, {5, 37, 0}, {4, 128, 1}, {7, 1000, 0}, {2, 4099, 0}, {3, 4100, 1}, {2, 300001, 1}}

// TrySoftmax compiles code in place of a softmax step's file (the original when empty), shows its
// compile report, and on a GPU checks it on small awkward shapes (every element; a shape the step
// refuses is shown with the plan's reason) and at the step's own shape, then times it beside the
// original step in the same run.
func TrySoftmax(env *lab.Env, step, code string) (err error) {
	s, err := SoftmaxStepByName(step)
	if err != nil {
		return err
	}
	code, invite := lab.ReaderCode(code, lab.OriginalOf(kr.Kernels, s.File))
	defer lab.InviteAfter(invite, s.Name, &err)
	if c, ok := RefusedOn(env.Device())[s.Name]; ok {
		return c.Err()
	}
	d := s.DTypes[0]
	rows, cols := softmaxTryShape(s)
	src, plan, reps, err := buildSoftmax(env, s, code)
	if err != nil {
		return err
	}
	show.Reports("compile report", reps).Display()
	env.ShowSASSCollapsed(src, compile.Options{Defines: plan.Defines}) // collapsed: the step's machine code
	if !env.GPU() {
		return showRecorded(env, code, func(run *record.Run) []record.Record {
			var out []record.Record
			for _, c := range []string{CaseSoftmax, CaseSoftmax16, CaseShortRows} {
				for _, r := range run.Select(c) {
					if r.Variant == s.Name {
						out = append(out, r)
					}
				}
			}
			return out
		})
	}
	checks := lab.ShapeChecks{Title: s.Name + " on awkward shapes (every element checked)"}
	for i, sh := range trySoftmaxShapes {
		p, err := NewSoftmaxProblem(env, d, sh[0], sh[1], uint64(900+i), sh[2])
		if err != nil {
			return err
		}
		res, _, err := p.Check(s, code)
		p.Free()
		if wrong, err := addTryCheck(&checks, shape(sh[0], sh[1]), sh[2] > 0, res, err); wrong || err != nil {
			return err
		}
	}
	checks.Table().Display()
	p, err := NewSoftmaxProblem(env, d, rows, cols, 11, 0)
	if err != nil {
		return err
	}
	defer p.Free()
	var recs []record.Record
	for _, c := range []string{"", code} {
		variant := s.Name + " (original)"
		if c != "" {
			variant = s.Name + " (this cell)"
		}
		rec, err := p.Measure("try", s, c, variant)
		if err != nil {
			return fmt.Errorf("%s: %w", variant, err)
		}
		recs = append(recs, rec)
		if code == "" {
			break
		}
	}
	show.Records(fmt.Sprintf("%s at %s (%s checked)", s.Name, shape(rows, cols), p.Checked()), recs, env.Receipt, s.Name+" (original)").Display()
	return nil
}

func showRecorded(env *lab.Env, code string, pick func(*record.Run) []record.Record) error {
	rec, err := env.Recorded(ID)
	if err != nil {
		show.Note(show.Info, "The kernel compiled. Running it needs a GPU, and no recorded run of this lesson was found.")
		return nil
	}
	if recs := pick(rec); len(recs) > 0 && code == "" {
		show.Records("recorded", recs, rec.Receipt).Display()
	}
	show.Note(show.Info, "The kernel compiled. Running it needs a GPU; the recorded numbers of the original step are above.")
	return nil
}

// WalkSoftmax shows a softmax step's source, then TrySoftmax on it.
func WalkSoftmax(env *lab.Env, step string) error {
	s, err := SoftmaxStepByName(step)
	if err != nil {
		return err
	}
	name := func(s SoftmaxStep) string { return s.Name }
	if err := lab.ShowChange(ID+" softmax", SoftmaxSteps, name, func(s SoftmaxStep) (compile.Source, error) { return kr.Source(s.File) }, s.Name); err != nil {
		return err
	}
	return TrySoftmax(env, step, "")
}

// tryLNShapes are the shapes an edited layer norm step is checked on.
var tryLNShapes = [][3]int{{1, 1, 0}, {3, 7, 0}, {2, 1000, 0}, {5, 4099, 0}, {4, 4100, 1}, {3, 65536, 0}, {2, 70000, 0}}

// TryLayerNorm is TrySoftmax for a layer norm step (code replaces the step's File).
func TryLayerNorm(env *lab.Env, step, code string) (err error) {
	s, err := LNStepByName(step)
	if err != nil {
		return err
	}
	code, invite := lab.ReaderCode(code, lab.OriginalOf(kr.Kernels, s.File))
	defer lab.InviteAfter(invite, s.Name, &err)
	if c, ok := RefusedOn(env.Device())[s.Name]; ok {
		return c.Err()
	}
	src, err := kr.Source(s.File)
	if err != nil {
		return err
	}
	if code != "" {
		src = compile.Source{Name: "edited_" + s.File, Code: code}
	}
	prog, err := env.Build(src)
	if err != nil {
		return err
	}
	show.Note(show.Success, fmt.Sprintf("%s compiled: NVRTC %s for %s, %d bytes of PTX.", src.Name, prog.Compiled.NVRTC, prog.Compiled.Arch, len(prog.Compiled.PTX)))
	env.ShowSASSCollapsed(src, compile.Options{}) // collapsed: the step's machine code
	caseName, tn, tm := lnTimedShape(s)
	if !env.GPU() {
		return showRecorded(env, code, func(run *record.Run) []record.Record {
			r, ok := run.Find(caseName, s.Name, int64(tm))
			if !ok {
				return nil
			}
			return []record.Record{r}
		})
	}
	checks := lab.ShapeChecks{Title: s.Name + " on awkward shapes (every element checked)"}
	for i, sh := range tryLNShapes {
		p, err := NewLNProblem(env, sh[0], sh[1], uint64(700+i), false, false, sh[2])
		if err != nil {
			return err
		}
		res, _, err := p.Check(s, code)
		p.Free()
		label := fmt.Sprintf("(%d, %d)", sh[0], sh[1])
		if wrong, err := addTryCheck(&checks, label, sh[2] > 0, res, err); wrong || err != nil {
			return err
		}
	}
	checks.Table().Display()
	p, err := NewLNProblem(env, tn, tm, 12, false, false, 0)
	if err != nil {
		return err
	}
	defer p.Free()
	var recs []record.Record
	for _, c := range []string{"", code} {
		variant := s.Name + " (original)"
		if c != "" {
			variant = s.Name + " (this cell)"
		}
		rec, err := p.Measure("try", s, c, variant, false)
		if err != nil {
			return fmt.Errorf("%s: %w", variant, err)
		}
		recs = append(recs, rec)
		if code == "" {
			break
		}
	}
	show.Records(fmt.Sprintf("%s at (%d, %d) (%s checked)", s.Name, tn, tm, p.Checked()), recs, env.Receipt, s.Name+" (original)").Display()
	return nil
}

// lnTimedShape is where a Try times layer norm step s, and the run's case with that shape: the
// article's (16, 4M), or for step 5, which holds a sample on chip, the sweep's shortest samples.
func lnTimedShape(s LNStep) (caseName string, N, M int) {
	if s.Name == LNSteps[4].Name {
		return CaseLNSweep, LNSweepTotal / WarpRowMax, WarpRowMax
	}
	return CaseLN, LNSamples, LNSize
}

// WalkLayerNorm shows a layer norm step's source (and the statistics file it reuses), then TryLayerNorm.
func WalkLayerNorm(env *lab.Env, step string) error {
	s, err := LNStepByName(step)
	if err != nil {
		return err
	}
	name := func(s LNStep) string { return s.Name }
	if err := lab.ShowChange(ID+" layer norm", LNSteps, name, func(s LNStep) (compile.Source, error) { return kr.Source(s.File) }, s.Name); err != nil {
		return err
	}
	return TryLayerNorm(env, step, "")
}

// addTryCheck adds the check of a step on one shape of a Try to its table: refused before launch
// (the shapes go on), right on every element, or wrong (wrong is true: the table so far is shown
// with a note saying what was wrong, and nothing is timed). err is a failure of the lab itself,
// named with the shape.
func addTryCheck(checks *lab.ShapeChecks, label string, misaligned bool, res check.Result, err error) (wrong bool, _ error) {
	if misaligned {
		label += " misaligned view"
	}
	var refused *Refusal
	switch {
	case errors.As(err, &refused):
		checks.Refuse(label, refused.Err)
	case err != nil:
		return false, fmt.Errorf("%s: %w", label, err)
	case !res.OK:
		checks.Wrong(label, res.String())
		checks.Table().Display()
		show.Note(show.Warning, fmt.Sprintf("%s: %v", label, res.Err()))
		return true, nil
	default:
		checks.Pass(label, checkFigure(res))
	}
	return false, nil
}

// checkFigure is a passing check's figure for a table cell: its errors and bound, without the verdict.
func checkFigure(res check.Result) string {
	s := strings.TrimSpace(strings.TrimPrefix(res.String(), "PASS"))
	return strings.ReplaceAll(strings.ReplaceAll(s, "  (", " ("), "  ", ", ")
}

package vecadd

import (
	"fmt"
	"time"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/charts"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// TableN is the table's n: 64M floats, 768 MiB moved per add. A quick run measures the table at
// the same n (the recorded run's), with fewer repetitions and sweep points.
const TableN = 64 << 20

// SweepSizes are the n of the scaling plot: 64K to 256M elements.
func SweepSizes(quick bool) []int {
	var ns []int
	step := 2
	if quick {
		step = 4
	}
	for n := 1 << 16; n <= 1<<28; n *= step {
		ns = append(ns, n)
	}
	return ns
}

// Lesson is lesson 00 for the reproduce command.
var Lesson = lab.Lesson{ID: ID, Title: "Setup and your first kernel: vector add", Run: Run, Tables: Tables, Figures: Figures}

// Run measures the copy bandwidth, every step at TableN, the size sweep and the bad measurements.
// A step the GPU cannot run (StepChecks) is neither compiled nor launched: the run ends with a
// refused record for each.
func Run(env *lab.Env, quick bool) (*record.Run, error) {
	run := env.NewRun(ID)
	refused := refusedOn(env.Device())
	runs := func(s Step) bool { _, no := refused[s.Name]; return !no }
	n := TableN
	sweep := SweepSizes(quick)
	prog := show.NewProgress("lesson 00", 2+len(Steps)+len(sweep)*len(Steps))
	defer prog.Done()

	run.Add(env.CopyRecord("add"))
	prog.Step("copy bandwidth")

	p, err := NewProblem(env, n, 1)
	if err != nil {
		return nil, err
	}
	for _, s := range Steps {
		if !runs(s) {
			continue
		}
		rec, err := p.Measure(s, "")
		if err != nil {
			p.Free()
			return nil, err
		}
		run.Add(rec)
		report, _ := reportOf(env, s, p)
		run.Kernels = append(run.Kernels, report)
		prog.Step(s.Name)
	}
	var bad []record.Record
	if runs(Steps[2]) { // the bad measurements time the float4 step
		bad, err = BadMeasurements(env, p)
	}
	p.Free()
	if err != nil {
		return nil, err
	}
	for _, r := range bad {
		run.Add(r)
	}
	prog.Step("bad measurements")

	for _, size := range sweep {
		sp, err := NewProblem(env, size, 2)
		if err != nil {
			return nil, err
		}
		for _, s := range Steps {
			if !runs(s) {
				continue
			}
			rec, err := sp.Measure(s, "")
			if err != nil {
				sp.Free()
				return nil, err
			}
			rec.Case = "sweep"
			run.Add(rec)
			prog.Step(fmt.Sprintf("%s n=%d", s.Name, size))
		}
		sp.Free()
	}
	for _, c := range StepChecks(env.Device()) {
		if c2, no := refused[c.Step]; no {
			run.Add(lab.RefusedRecord(c2))
		}
	}
	return run, nil
}

func reportOf(env *lab.Env, s Step, p *Problem) (record.KernelReport, error) {
	_, prog, err := Launcher(env, s, "", p)
	if err != nil {
		return record.KernelReport{}, err
	}
	return prog.Report(s.Kernel, Block, 0), nil
}

// BadMeasurements times the float4 kernel three wrong ways, beside the right one on the same n:
// a host clock around the launch alone (the launch returns before the kernel runs), a single cold
// run (the first launch pays for JIT caches, clocks ramping up, TLB misses), and an L2-warm loop on an
// input small enough to stay in L2 between runs (no flush), which reports more than DRAM can give.
func BadMeasurements(env *lab.Env, p *Problem) ([]record.Record, error) {
	s := Steps[2]
	mk := func(variant, note string, n int) record.Record {
		return record.Record{Case: "method", Variant: variant, Kind: "kernel", DType: "float32", Shape: fmt.Sprintf("n=%d", n), Size: int64(n), Correct: true, Tol: Tolerance.Name, Note: note}
	}
	var out []record.Record

	// 1. A host clock around an asynchronous launch.
	fresh, err := NewProblem(env, p.N, 3)
	if err != nil {
		return nil, err
	}
	run, _, err := Launcher(env, s, "", fresh)
	if err != nil {
		fresh.Free()
		return nil, err
	}
	start := time.Now()
	err = run()
	hostMS := float64(time.Since(start).Nanoseconds()) / 1e6
	if err == nil {
		err = env.Session.Synchronize()
	}
	if err != nil {
		fresh.Free()
		return nil, err
	}
	out = append(out, env.WithTiming(mk("host clock, no sync", "time.Now around the launch call only", p.N), Work(p.N), bench.Timing{Median: hostMS, Min: hostMS, Max: hostMS}))

	// 2. One cold run, timed by events, on buffers no kernel has touched.
	cold, err := NewProblem(env, p.N, 4)
	if err != nil {
		fresh.Free()
		return nil, err
	}
	run, _, err = Launcher(env, s, "", cold)
	if err == nil {
		var ms float64
		ms, err = env.Session.Elapsed(run)
		out = append(out, env.WithTiming(mk("one cold run", "a single event-timed run, no warm-up", p.N), Work(p.N), bench.Timing{Median: ms, Min: ms, Max: ms}))
	}
	cold.Free()
	fresh.Free()
	if err != nil {
		return nil, err
	}

	// 3. An input that fits in L2, timed without and with the flush.
	small := L2N(env.Session.Device)
	sp, err := NewProblem(env, small, 5)
	if err != nil {
		return nil, err
	}
	defer sp.Free()
	run, _, err = Launcher(env, s, "", sp)
	if err != nil {
		return nil, err
	}
	saved := env.Bench.Method
	defer func() { env.Bench.Method = saved }()
	env.Bench.Method.FlushL2 = false
	warm, err := env.Measure(mk("L2-warm loop", "median of runs without an L2 flush; the data stays in L2", small), Work(small), run)
	if err != nil {
		return nil, err
	}
	env.Bench.Method.FlushL2 = true
	flushed, err := env.Measure(mk("L2 flushed (the method)", "median of runs with the L2 flushed before each", small), Work(small), run)
	if err != nil {
		return nil, err
	}
	return append(out, warm, flushed), nil
}

// Tables are the step table and the method table.
func Tables(run *record.Run) []show.Table {
	steps := show.Records("c = a + b, float32: each step against the device copy", run.Select("add"), run.Receipt, "naive")
	method := show.Records("Why the method matters: the float4 kernel timed four ways", run.Select("method"), run.Receipt)
	return []show.Table{steps, method}
}

// Figures are the bandwidth per step, the sweep and the roofline.
func Figures(run *record.Run) ([]lab.Figure, error) {
	var labels []string
	var pct []float64
	for _, r := range run.Select("add") {
		labels = append(labels, r.Variant)
		pct = append(pct, r.PctBW)
	}
	bars, err := charts.Bars("vector add: % of measured copy bandwidth", "% of copy bandwidth", labels,
		[]charts.Series{{Name: "float32", Values: pct}}, false, 100)
	if err != nil {
		return nil, err
	}
	var lines []charts.Line
	for _, s := range Steps {
		l := charts.Line{Name: s.Name}
		for _, r := range run.Select("sweep") {
			if r.Variant == s.Name {
				l.X = append(l.X, float64(r.Size))
				l.Y = append(l.Y, r.GBps)
			}
		}
		lines = append(lines, l)
	}
	sweep, err := charts.Lines("vector add: bandwidth against size", "elements", "GB/s", lines, true, false)
	if err != nil {
		return nil, err
	}
	var pts []charts.Point
	for _, r := range run.Select("add") {
		if r.Kind == "kernel" {
			pts = append(pts, charts.Point{Name: r.Variant, Intensity: 1.0 / 12, GFLOPs: r.GFLOPs})
		}
	}
	roof, err := charts.Roofline("vector add on the roofline", run.Receipt.CopyGBps, run.Receipt.PeakGFLOPS, pts)
	if err != nil {
		return nil, err
	}
	return []lab.Figure{{Name: "00_bandwidth", Plot: bars}, {Name: "00_sweep", Plot: sweep}, {Name: "00_roofline", Plot: roof}}, nil
}

package matmul

import (
	"fmt"
	"slices"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// Lesson is lesson 03 for the reproduce command.
var Lesson = lab.Lesson{ID: ID, Title: "Matrix multiplication: from naive to tensor cores at float32 accuracy",
	Run: Run, Tables: Tables, Figures: Figures, Exercises: Exercises}

// Seed is the seed of the inputs at the article's shape.
const Seed = 3

// SweepSizes are the square sizes of the sweep.
func SweepSizes(quick bool) []int {
	if quick {
		return []int{256, 1024, 4096}
	}
	return []int{256, 512, 1024, 2048, 4096, 8192}
}

// SweepSteps are the steps measured over the sweep: the general fallback, the best CUDA-core step,
// TF32 and the two float32-accurate tensor-core steps.
func SweepSteps() []Step {
	var out []Step
	for _, n := range []string{"3 shared", "7 warp tile", "8 tensor core tf32", "8b 3xTF32 split", "9 fp16x3 split"} {
		st, _ := StepByName(n)
		out = append(out, st)
	}
	return out
}

// measureAnyway is Problem.Measure for a step whose failed check is recorded instead of stopping the run
// (the variants: the hi-only kernel fails the float32 check by design).
func (p *Problem) measureAnyway(caseName string, st Step) (record.Record, error) {
	rec := p.Record(caseName, st)
	res, err := p.Check(st, "")
	if err != nil {
		return rec, err
	}
	rec.RelL2, rec.MaxAbs, rec.Correct = res.RelL2, res.MaxAbs, res.OK
	if !res.OK {
		rec.Note += "; FAILS the check: " + res.Err().Error()
	}
	run, _, _, err := p.Launcher(st, "")
	if err != nil {
		return rec, err
	}
	return p.env.Measure(rec, p.Shape.Work(), run)
}

// Run measures, in one process: cuBLAS through PyTorch at every shape (and its error against our
// float64 reference at the article's shape), every step and variant at 4096^3 (checked, then timed),
// the KernelBench trials, the size sweep and the non-square shape.
//
// A step the GPU cannot run (StepChecks) is neither compiled nor launched anywhere in the run: the
// run ends with a refused record for each, saying why and which step runs instead.
func Run(env *lab.Env, quick bool) (*record.Run, error) {
	run := env.NewRun(ID)
	refused := refusedOn(env.Device())
	runs := func(st Step) bool { _, no := refused[st.Name]; return !no }
	sweep := SweepSizes(quick)
	trials := KBTrials
	if quick {
		trials = 2
	}
	prog := show.NewProgress("lesson 03", 2+len(Awkward)+len(Steps)+len(Variants)+len(sweep)*len(SweepSteps()))
	defer prog.Done()

	p, err := NewCheckedProblem(env, Article, Seed)
	if err != nil {
		return nil, err
	}
	defer p.Free()
	shapes := append([]Shape{Article}, Awkward...)
	for _, n := range sweep {
		if n != Article.M {
			shapes = append(shapes, Shape{M: n, N: n, K: n})
		}
	}
	addTorch(env, run, p, shapes)
	prog.Step("PyTorch (cuBLAS)")

	for _, st := range Steps {
		if !runs(st) {
			prog.Step(st.Name + " (refused)")
			continue
		}
		rec, err := p.Measure("matmul", st, "")
		if err != nil {
			return nil, err
		}
		run.Add(rec)
		if rep, err := p.Report(st); err == nil {
			run.Kernels = append(run.Kernels, rep)
		}
		prog.Step(st.Name)
	}
	for _, st := range Variants {
		if !runs(st) {
			prog.Step(st.Name + " (refused)")
			continue
		}
		rec, err := p.measureAnyway("variant", st)
		if err != nil {
			return nil, err
		}
		run.Add(rec)
		prog.Step(st.Name)
	}

	kb, err := KernelBench(env, trials)
	if err != nil {
		return nil, err
	}
	for _, r := range KBRecords(kb) {
		run.Add(r)
	}
	prog.Step("KernelBench trials")

	for _, n := range sweep {
		s := Shape{M: n, N: n, K: n}
		sp, err := NewProblem(env, s, uint64(100+n), 1, 1, 256)
		if err != nil {
			return nil, err
		}
		for _, st := range SweepSteps() {
			if !runs(st) {
				prog.Step(st.Name + " (refused)")
				continue
			}
			rec, err := sp.Measure("sweep", st, "")
			if err != nil {
				sp.Free()
				return nil, err
			}
			run.Add(rec)
			prog.Step(fmt.Sprintf("%s n=%d", st.Name, n))
		}
		sp.Free()
	}

	for i, s := range Awkward {
		np, err := NewCheckedProblem(env, s, uint64(77+i))
		if err != nil {
			return nil, err
		}
		st := Pick(s, env.Session.Device, true, true)
		rec, err := np.Measure("nonsquare", st, "")
		np.Free()
		if err != nil {
			return nil, err
		}
		rec.Note += "; the step Multiply picks: every faster step refuses this shape"
		run.Add(rec)
		prog.Step("awkward " + s.String())
	}
	for _, c := range StepChecks(env.Device()) {
		if c2, ok := refused[c.Step]; ok {
			run.Add(lab.RefusedRecord(c2))
		}
	}
	return run, nil
}

// addTorch measures the cuBLAS baselines. When PyTorch is unavailable the records say why.
func addTorch(env *lab.Env, run *record.Run, p *Problem, shapes []Shape) {
	tr, err := RunTorch(shapes, p, env.Bench.Method)
	if err != nil {
		for _, v := range TorchVariants {
			run.Add(record.Record{Case: "matmul", Variant: v.Name, Kind: "baseline", DType: v.DType, Shape: Article.String(), Note: err.Error()})
		}
		return
	}
	run.Receipt.Torch = tr.Torch
	for _, s := range shapes {
		times := tr.Times[s.String()]
		for _, v := range TorchVariants {
			t, ok := times[v.Key]
			if !ok {
				continue
			}
			rec := record.Record{Variant: v.Name, Kind: "baseline", DType: v.DType, Shape: s.String(), Size: int64(s.M), Correct: true,
				Note: "torch " + tr.Torch + ", inputs torch.rand*2-1"}
			switch {
			case s == Article:
				rec.Case = "matmul"
				if c, ok := tr.Cross[v.Key]; ok {
					rec.RelL2, rec.MaxAbs, rec.Correct, rec.Tol = c.RelL2, c.MaxAbs, c.OK, c.Tol.Name
					rec.Note += "; error on our inputs against float64, " + p.Sample.What
				}
			case slices.Contains(Awkward, s):
				rec.Case = "nonsquare"
			default:
				rec.Case = "sweep"
			}
			run.Add(env.WithTiming(rec, s.Work(), t.Bench()))
			if s == Article {
				r2 := rec
				r2.Case = "sweep"
				run.Add(env.WithTiming(r2, s.Work(), t.Bench()))
			}
		}
	}
}

// Unavailable reports whether a record has no timing (a baseline that could not run).
func Unavailable(r record.Record) bool { return r.MedianMS <= 0 }

// crossOf is cuBLAS's error at the article's shape for a variant name, from the run.
func crossOf(run *record.Run, variant string) (check.Result, bool) {
	r, ok := run.Find("matmul", variant, 0)
	if !ok || r.RelL2 == 0 {
		return check.Result{}, false
	}
	return check.Result{RelL2: r.RelL2, MaxAbs: r.MaxAbs, OK: r.Correct}, true
}

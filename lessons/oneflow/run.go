package oneflow

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// Sections of the lesson, each runnable alone (a notebook cell runs one).
const (
	SecElementwise = "elementwise"
	SecAtomics     = "atomics"
	SecUpsample    = "upsample"
)

// Sections are the lesson's parts, in order.
var Sections = []string{SecElementwise, SecAtomics, SecUpsample}

// SweepSizes are the n of the elementwise size sweep: 1M to 256M elements, doubling (quick: x4,
// up to 64M, plus the article's 32M).
func SweepSizes(quick bool) []int {
	var ns []int
	if quick {
		return []int{1 << 20, 4 << 20, 16 << 20, MulN, 64 << 20}
	}
	for n := 1 << 20; n <= 256<<20; n *= 2 {
		ns = append(ns, n)
	}
	return ns
}

// Run measures the whole lesson: the three sections in one run.
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

// RunSection measures one section ("elementwise", "atomics" or "upsample"). A step the GPU cannot
// run (StepChecks) is neither compiled nor launched: the section ends with a refused record for each.
func RunSection(env *lab.Env, section string, quick bool) (*record.Run, error) {
	if !env.GPU() {
		return nil, fmt.Errorf("lesson %s: measuring needs a GPU (%s)", ID, env.Mode)
	}
	run := env.NewRun(ID)
	refused := refusedOn(env.Device())
	switch section {
	case SecElementwise:
		err := runElementwise(env, run, quick, refused)
		var names []string
		for _, s := range append(append([]MulStep{}, MulSteps...), InflightSweep()...) {
			names = append(names, s.Name)
		}
		addRefused(run, refused, append(names, InflightName))
		return run, err
	case SecAtomics:
		prog := show.NewProgress("lesson 02: half atomics", len(AtomicSteps))
		defer prog.Done()
		err := MeasureDot(env, DotN, run, prog.Step)
		var names []string
		for _, s := range AtomicSteps {
			names = append(names, s.Name)
		}
		addRefused(run, refused, names)
		return run, err
	case SecUpsample:
		err := runUpsample(env, run, refused)
		var names []string
		for _, s := range UpSteps {
			names = append(names, s.Name)
		}
		addRefused(run, refused, names)
		return run, err
	}
	return nil, fmt.Errorf("lesson %s: no section %q (sections: %v)", ID, section, Sections)
}

func runElementwise(env *lab.Env, run *record.Run, quick bool, refused map[string]lab.StepCheck) error {
	runs := func(name string) bool { _, no := refused[name]; return !no }
	sweep := SweepSizes(quick)
	prog := show.NewProgress("lesson 02: elementwise", len(DTypes)*(4+len(InflightSweep())+len(sweep)*len(MulSteps))+1)
	defer prog.Done()
	run.Add(env.CopyRecord("mul"))
	maxN := slices.Max(sweep)
	for _, d := range DTypes {
		// The article's size, aligned and misaligned.
		p, err := NewMulProblem(env, d, MulN, 1, 0)
		if err != nil {
			return err
		}
		for _, s := range MulSteps {
			if !runs(s.Name) {
				continue
			}
			rec, err := p.Measure(s, "", s.Name)
			if err != nil {
				p.Free()
				return err
			}
			run.Add(rec)
			_, plan, pr, err := p.Launcher(s, "")
			if err == nil {
				run.Kernels = append(run.Kernels, pr.Report(plan.Kernel, Block, 0))
			}
			prog.Step(fmt.Sprintf("%s %s", s.Name, d))
		}
		p.Free()
		if runs(MulSteps[1].Name) {
			q, err := NewMulProblem(env, d, MulN, 2, 1)
			if err != nil {
				return err
			}
			rec, err := q.Measure(MulSteps[1], "", "packed, misaligned (pack 1)")
			q.Free()
			if err != nil {
				return err
			}
			run.Add(rec)
		}
		prog.Step("misaligned " + string(d))

		// Step 3: its sweep at 32M, then the fastest point measured again as the ladder's step.
		best, err := measureInflight(env, run, d, prog.Step, refused)
		if err != nil {
			return err
		}
		if best.Name == "" || !runs(InflightName) { // every point refused
			prog.Step(InflightName + " " + string(d) + " (refused)")
		} else if err := measureTuned(env, run, d, best); err != nil {
			return err
		} else {
			prog.Step(InflightName + " " + string(d))
		}

		// The sweep: one allocation of the largest size, views of it.
		big, err := NewMulProblem(env, d, maxN, 3, 0)
		if err != nil {
			return err
		}
		for _, n := range sweep {
			sub, err := big.Sub(n)
			if err != nil {
				big.Free()
				return err
			}
			for _, s := range MulSteps {
				if !runs(s.Name) {
					continue
				}
				rec, err := sub.Measure(s, "", s.Name)
				if err != nil {
					big.Free()
					return err
				}
				rec.Case = "mul sweep"
				run.Add(rec)
				prog.Step(fmt.Sprintf("%s %s n=%d", s.Name, d, n))
			}
		}
		big.Free()
	}
	return torchElementwise(env, run, sweep, prog.Step)
}

// measureTuned measures step 3's fastest sweep point again as the ladder's step (InflightName).
func measureTuned(env *lab.Env, run *record.Run, d DType, best MulStep) error {
	p, err := NewMulProblem(env, d, MulN, 1, 0)
	if err != nil {
		return err
	}
	rec, err := p.Measure(best, "", InflightName)
	if err == nil {
		_, plan, pr, lerr := p.Launcher(best, "")
		if lerr == nil {
			rep := pr.Report(plan.Kernel, Block, 0)
			rep.Source += " (" + strings.Join(best.Defines, " ") + ")"
			run.Kernels = append(run.Kernels, rep)
		}
	}
	p.Free()
	if err != nil {
		return err
	}
	rec.Note += "; chosen by the sweep: " + best.Name
	run.Add(rec)
	return nil
}

// torchElementwise adds PyTorch's torch.mul over the sweep (and at the article's size).
func torchElementwise(env *lab.Env, run *record.Run, sweep []int, step func(string)) error {
	if err := TorchBaselines(env, run, sweep, nil, "mul sweep"); err != nil {
		run.Add(record.Record{Case: "unavailable", Variant: "PyTorch torch.mul", Kind: "baseline", Note: err.Error()})
	} else {
		for _, r := range run.Select("mul sweep") {
			if r.Kind == "baseline" && r.Size == MulN {
				r.Case = "mul"
				run.Records = append(run.Records, r)
			}
		}
	}
	step("PyTorch")
	return nil
}

func runUpsample(env *lab.Env, run *record.Run, refused map[string]lab.StepCheck) error {
	shapes := [][4]int{ArticleShape, LargeShape}
	prog := show.NewProgress("lesson 02: upsample", len(shapes)*len(DTypes)*len(UpSteps)*2+1)
	defer prog.Done()
	run.Add(env.CopyRecord("upsample forward"))
	for _, shape := range shapes {
		for _, d := range DTypes {
			p, err := NewUpProblem(env, d, shape, 11, 0)
			if err != nil {
				return err
			}
			for _, dir := range []string{Forward, Backward} {
				for _, s := range UpSteps {
					if _, no := refused[s.Name]; no {
						continue
					}
					rec, err := p.Measure(s, dir, "")
					if err != nil {
						p.Free()
						return err
					}
					run.Add(rec)
					if shape == ArticleShape {
						if _, plan, pr, err := p.Launcher(s, dir, ""); err == nil {
							run.Kernels = append(run.Kernels, pr.Report(plan.Kernel, Block, 0))
						}
					}
					prog.Step(fmt.Sprintf("%s %s %s %s", s.Name, dir, d, fmtShape(shape)))
				}
			}
			p.Free()
		}
	}
	if err := TorchBaselines(env, run, nil, shapes, "mul"); err != nil {
		run.Add(record.Record{Case: "unavailable", Variant: "PyTorch upsample", Kind: "baseline", Note: err.Error()})
	}
	prog.Step("PyTorch")
	return nil
}

// measureInflight measures every point of step 3's sweep at the article's 32M elements (case
// "mul inflight", Size = packs per thread): each checked on a NaN-poisoned output, then timed. It
// returns the fastest point.
// A point the GPU refuses is left out; the zero MulStep comes back when every point is refused.
func measureInflight(env *lab.Env, run *record.Run, d DType, step func(string), refused map[string]lab.StepCheck) (MulStep, error) {
	p, err := NewMulProblem(env, d, MulN, 5, 0)
	if err != nil {
		return MulStep{}, err
	}
	defer p.Free()
	var best MulStep
	bestMS := math.Inf(1)
	for _, s := range InflightSweep() {
		if _, no := refused[s.Name]; no {
			continue
		}
		rec, err := p.Measure(s, "", s.Name)
		if err != nil {
			return MulStep{}, err
		}
		rec.Case, rec.Size = "mul inflight", int64(s.PacksPerThread)
		run.Add(rec)
		if rec.MedianMS < bestMS {
			best, bestMS = s, rec.MedianMS
		}
		step(fmt.Sprintf("%s %s", s.Name, d))
	}
	return best, nil
}

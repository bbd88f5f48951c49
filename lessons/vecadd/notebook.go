package vecadd

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
	kv "github.com/cudalessons/cudalessons/kernels/vecadd"
)

// Walk is one step of the notebook: the kernel's source, its compile report, then (GPU mode) a
// correctness check on a poisoned output and a timing at TableN, or (no-GPU mode) the recorded ones.
func Walk(env *lab.Env, step string) error {
	s, err := StepByName(step)
	if err != nil {
		return err
	}
	if err := lab.ShowChange(ID, Steps, func(s Step) string { return s.Name }, func(s Step) (compile.Source, error) { return kv.Source(s.File) }, s.Name); err != nil {
		return err
	}
	return walkRun(env, step, "")
}

// SanitizeN is the size a Trial checks under compute-sanitizer (Sanitize): small enough for the
// tools, and not a multiple of the block, so that the last block has threads past the end.
const SanitizeN = 1<<20 + 3

// Trial is a step as the notebook lets a reader edit it (lab.Trial): code in place of the step's
// kernel (same name and parameters), checked against the reference on a NaN-poisoned output and
// timed at TableN beside the original step (at SanitizeN, once, under compute-sanitizer).
func Trial(env *lab.Env, step string) (lab.Trial, error) {
	s, err := StepByName(step)
	if err != nil {
		return lab.Trial{}, err
	}
	var p *Problem
	return lab.Trial{Step: s.Name, Lesson: ID, Original: lab.OriginalOf(kv.Kernels, s.File),
		Compile: func(code string) ([]record.KernelReport, error) {
			source, err := sourceOf(s, code)
			if err != nil {
				return nil, err
			}
			prog, err := env.Build(source, s.Kernel)
			if err != nil {
				return nil, err
			}
			return []record.KernelReport{prog.Report(s.Kernel, Block, 0)}, nil
		},
		Measure: func(code string) ([]record.Record, error) {
			if p == nil {
				var err error
				n := TableN
				if lab.UnderSanitizer() {
					n = SanitizeN // one run under compute-sanitizer, on a size with a partial last block
				}
				if p, err = NewProblem(env, n, 11); err != nil {
					return nil, err
				}
			}
			rec, err := p.Measure(s, code)
			return []record.Record{lab.Edited(rec, code)}, err
		},
		Recorded: lab.RecordedAs("add", s.Name),
		Close: func() {
			if p != nil {
				p.Free()
			}
		},
	}, nil
}

// Try compiles code in place of a step's kernel (same name and parameters), shows its compile
// report, and in the GPU mode checks it against the reference and times it beside the original
// step (lab.Env.Try). It is how a reader edits a kernel in the notebook and reruns it.
func Try(env *lab.Env, step, code string) error {
	t, err := Trial(env, step)
	if err != nil {
		return err
	}
	return env.Try(t, code)
}

// Sanitize runs the reader's code for a step (the original when empty) once under
// compute-sanitizer (lab.Env.Sanitize) with tool ("" for memcheck; racecheck, synccheck,
// initcheck), and shows the first reports with their source lines, threads and blocks.
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

// walkRun is Walk's measurement: the step's compile report, then (GPU mode) the step checked and
// timed beside the naive step, or (no-GPU mode) its recorded numbers.
func walkRun(env *lab.Env, step, code string) error {
	s, err := StepByName(step)
	if err != nil {
		return err
	}
	source, err := sourceOf(s, code)
	if err != nil {
		return err
	}
	prog, err := env.Build(source, s.Kernel)
	if err != nil {
		return err
	}
	show.Reports("compile report", []record.KernelReport{prog.Report(s.Kernel, Block, 0)}).Display()
	env.ShowSASSCollapsed(source, compile.Options{})
	if !env.GPU() {
		rec, err := env.Recorded(ID)
		if err != nil {
			return err
		}
		if r, ok := rec.Find("add", s.Name, 0); ok && code == "" {
			show.Records("recorded "+s.Name, []record.Record{r}, rec.Receipt, "device copy").Display()
		}
		show.Note(show.Info, "The kernel compiled. Running it needs a GPU; the recorded numbers of the original step are above.")
		return nil
	}
	p, err := NewProblem(env, TableN, 11)
	if err != nil {
		return err
	}
	defer p.Free()
	var recs []record.Record
	for _, variant := range []struct {
		s    Step
		code string
	}{{Steps[0], ""}, {s, code}} {
		rec, err := p.Measure(variant.s, variant.code)
		if variant.code != "" || variant.s.Name != Steps[0].Name {
			rec.Variant = variant.s.Name + " (this cell)"
		}
		if err != nil {
			return fmt.Errorf("%s: %w", rec.Variant, err)
		}
		recs = append(recs, rec)
	}
	show.Records(fmt.Sprintf("%s at n = %d", s.Name, TableN), recs, env.Receipt, "naive").Display()
	return nil
}

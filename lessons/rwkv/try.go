package rwkv

import (
	"strings"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	kr "github.com/cudalessons/cudalessons/kernels/rwkv"
)

// TryRows is how many (b,c) rows a Try checks at the article's shape (and as many channels' worth
// for dw): enough to catch a wrong index anywhere, quick enough for a cell.
const TryRows = 2048

// Trial is a forward or backward step as the notebook lets a reader edit it: code (with the same
// kernel names and parameters as the step's file) compiled, checked at the article's shape on
// NaN-poisoned outputs against the float64 reference on TryRows random rows, and timed against the
// original step. step is a forward step ("v3", "v5 register tile", "general") or a backward one
// ("bwd v2", "bwd general").
func Trial(env *lab.Env, step string) (lab.Trial, error) {
	s := ArticleShape
	device := env.Device()
	if strings.HasPrefix(step, "bwd") {
		st, err := BackwardStepByName(step)
		if step == GeneralBackward.Name {
			st, err = GeneralBackward, nil
		}
		if err != nil {
			return lab.Trial{}, err
		}
		if err := Refusal(st.Name, device); err != nil {
			return lab.Trial{}, err
		}
		var p *BackwardProblem
		return lab.Trial{Step: st.Name, Lesson: ID, Original: lab.OriginalOf(kr.Kernels, st.File),
			Compile: func(code string) ([]record.KernelReport, error) {
				return BackwardCompileReports(env, st.WithCode(code), s)
			},
			Measure: func(code string) ([]record.Record, error) {
				if p == nil {
					var err error
					if p, err = NewBackwardProblem(env, s, ArticleSeed, TryRows/s.B); err != nil {
						return nil, err
					}
				}
				rec, err := p.Measure(st.WithCode(code))
				return []record.Record{lab.Edited(rec, code)}, err
			},
			Recorded: lab.RecordedAs("backward", st.Name),
			Close:    func() { p.Free() },
		}, nil
	}
	st, err := StepByName(step)
	if step == GeneralStep.Name {
		st, err = GeneralStep, nil
	}
	if err != nil {
		return lab.Trial{}, err
	}
	if err := Refusal(st.Name, device); err != nil {
		return lab.Trial{}, err
	}
	if _, err := st.Plan(s, device); err != nil {
		return lab.Trial{}, err
	}
	var p *Problem
	return lab.Trial{Step: st.Name, Lesson: ID, Original: lab.OriginalOf(kr.Kernels, st.File),
		Compile: func(code string) ([]record.KernelReport, error) {
			rep, err := compileReport(env, st, s, code)
			return []record.KernelReport{rep}, err
		},
		Measure: func(code string) ([]record.Record, error) {
			if p == nil {
				var err error
				if p, err = NewProblem(env, s, ArticleSeed, TryRows); err != nil {
					return nil, err
				}
			}
			rec, err := p.Measure(st, code)
			return []record.Record{lab.Edited(rec, code)}, err
		},
		Recorded: lab.RecordedAs("forward", st.Name),
		Close:    func() { p.Free() },
	}, nil
}

// Try is the notebook's "edit any step" cell: code in place of step's kernel file, compiled,
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

package matmul

import (
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// trialCheck is the small shape a Trial checks every output of before the article's shape.
var trialCheck = Shape{M: 256, N: 384, K: 96}

// Trial is a step as lab's Profile and Sanitize take it (lab.Trial): code in place of the step's
// file (same kernel name and parameters; the original when empty), checked on a NaN-poisoned output
// against float64 (every output of 256x384x96 when the step takes that shape, then the sampled
// 4096^3) and timed at 4096^3. Its Step is the step's short name ("6"), the one the recorded
// profiles and Nsight Compute's targets use (nsight.Targets).
func Trial(env *lab.Env, step string) (lab.Trial, error) {
	st, err := StepByName(step)
	if err != nil {
		return lab.Trial{}, err
	}
	if err := Refusal(st, env.Device()); err != nil {
		return lab.Trial{}, err
	}
	cfg, err := st.Plan(Article, env.Device())
	if err != nil {
		return lab.Trial{}, err
	}
	var p *Problem
	return lab.Trial{Step: shortName(st), Lesson: ID,
		Compile: func(code string) ([]record.KernelReport, error) {
			prog, err := build(env, st, code)
			if err != nil {
				return nil, err
			}
			return []record.KernelReport{prog.Report(st.Kernel, cfg.Block.Count(), cfg.SharedBytes)}, nil
		},
		Measure: func(code string) ([]record.Record, error) {
			if st.Validate(trialCheck, env.Session.Device) == nil {
				sp, err := NewCheckedProblem(env, trialCheck, 21)
				if err != nil {
					return nil, err
				}
				res, err := sp.Check(st, code)
				sp.Free()
				if err != nil {
					return nil, err
				}
				if !res.OK {
					return nil, fmt.Errorf("%s on %v (every output checked): %w", st.Name, trialCheck, res.Err())
				}
			}
			if p == nil {
				if p, err = NewCheckedProblem(env, Article, 22); err != nil {
					return nil, err
				}
			}
			rec, err := p.Measure("try", st, code)
			if code != "" {
				rec.Variant = lab.EditedVariant(st.Name, code)
			}
			return []record.Record{rec}, err
		},
		Recorded: lab.RecordedAs("matmul", st.Name),
		Close: func() {
			if p != nil {
				p.Free()
			}
		},
	}, nil
}

// shortName is the first word of a step's name ("6" for "6 vectorized") when that word names the
// same step, else the whole name ("9 bf16x3 split": "9" is step 9).
func shortName(st Step) string {
	first, _, _ := strings.Cut(st.Name, " ")
	if s, err := StepByName(first); err == nil && s.Name == st.Name {
		return first
	}
	return st.Name
}

// Profile runs the original step once under Nsight Compute, and the reader's code once more when
// code is not empty (lab.Env.Profile), each in a child process, with the sections that answer the
// lesson's question (bank conflicts for steps 6 and 7, the tensor pipe for step 8), and shows both
// profiles side by side and their warp stall reasons. Without a GPU it compiles the code and shows
// the recorded profile of the step.
func Profile(env *lab.Env, step, code string) error {
	t, err := Trial(env, step)
	if err != nil {
		return err
	}
	return env.Profile(t, code)
}

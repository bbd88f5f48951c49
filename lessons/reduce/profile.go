package reduce

import (
	"errors"
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// SoftmaxTrial is softmax step as lab.Env's Profile (and Try) takes it: Compile builds the step, or
// the reader's code in its place, as its plan launches it at its Try shape; Measure checks it on
// Try's small awkward shapes (every element, NaN-poisoned outputs; a shape the plan refuses is
// skipped) and at that shape, then times it there. A step this GPU cannot run is refused by both.
func SoftmaxTrial(env *lab.Env, step string) (lab.Trial, error) {
	s, err := SoftmaxStepByName(step)
	if err != nil {
		return lab.Trial{}, err
	}
	refused := func() error {
		if c, ok := RefusedOn(env.Device())[s.Name]; ok {
			return c.Err()
		}
		return nil
	}
	var timed *SoftmaxProblem
	return lab.Trial{Step: s.Name, Lesson: ID,
		Compile: func(code string) ([]record.KernelReport, error) {
			if err := refused(); err != nil {
				return nil, err
			}
			_, _, reps, err := buildSoftmax(env, s, code)
			return reps, err
		},
		Measure: func(code string) ([]record.Record, error) {
			if err := refused(); err != nil {
				return nil, err
			}
			d := s.DTypes[0]
			for i, sh := range trySoftmaxShapes {
				p, err := NewSoftmaxProblem(env, d, sh[0], sh[1], uint64(900+i), sh[2])
				if err != nil {
					return nil, err
				}
				res, _, err := p.Check(s, code)
				p.Free()
				var refusal *Refusal
				switch {
				case errors.As(err, &refusal):
					continue // the plan's own limit, said before any launch
				case err != nil:
					return nil, fmt.Errorf("%s at %s: %w", s.Name, shape(sh[0], sh[1]), err)
				case !res.OK:
					return nil, fmt.Errorf("%s at %s: %w", s.Name, shape(sh[0], sh[1]), res.Err())
				}
			}
			if timed == nil {
				rows, cols := softmaxTryShape(s)
				if timed, err = NewSoftmaxProblem(env, d, rows, cols, 11, 0); err != nil {
					return nil, err
				}
			}
			variant := lab.EditedVariant(s.Name, code)
			rec, err := timed.Measure("try", s, code, variant)
			return []record.Record{rec}, err
		},
		Recorded: func(run *record.Run) []record.Record {
			var out []record.Record
			for _, c := range []string{CaseSoftmax, CaseSoftmax16, CaseShortRows} {
				for _, r := range run.Select(c) {
					if r.Variant == s.Name {
						out = append(out, r)
					}
				}
			}
			return out
		},
		Close: func() {
			if timed != nil {
				timed.Free()
			}
		},
	}, nil
}

// Profile runs softmax step once under Nsight Compute, and the reader's code once more when code is
// not empty (lab.Env.Profile), each in a child process, with the sections that answer the lesson's
// question for the step (the cluster step: its distributed shared memory traffic beside its DRAM
// traffic), and shows the profiles and their warp stall reasons. Without a GPU it compiles the code
// and shows the recorded profile of the step: TrySoftmax's cell with TrySoftmax replaced by Profile.
func Profile(env *lab.Env, step, code string) error {
	t, err := SoftmaxTrial(env, step)
	if err != nil {
		return err
	}
	return env.Profile(t, code)
}

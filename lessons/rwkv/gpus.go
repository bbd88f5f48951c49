package rwkv

import (
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	kr "github.com/cudalessons/cudalessons/kernels/rwkv"
)

// StepChecks checks, on d at the article's shape, every step the run measures, in the run's order:
// the forward ladder, v5's other tile sizes, then the backward ladder. Each check is the need its
// source declares, then its plan (tensor cores need 8.0; v5 to v8 need more shared memory a block
// than 7.5, 8.6 and 8.9 give at T = 768). A refused forward step names the ladder's step below it
// as the one that runs instead; a refused tile size names v5's nearest running tile, else v4.
func StepChecks(d gpu.DeviceInfo) []lab.StepCheck {
	s := ArticleShape
	var fwd []lab.StepCheck
	for _, st := range Steps {
		fwd = append(fwd, checkForward(st, s, d))
	}
	fwd = lab.WithInstead(fwd)
	out := append([]lab.StepCheck{}, fwd...)
	v5 := fwd[5]
	for _, tt := range V5Tiles {
		st := V5Step(tt)
		if st.Name == v5.Step {
			continue
		}
		c := checkForward(st, s, d)
		if !c.Runs() {
			c.Instead = v5.Instead
			if v5.Runs() {
				c.Instead = v5.Step
			}
		}
		out = append(out, c)
	}
	var bwd []lab.StepCheck
	for _, st := range BackwardSteps {
		bwd = append(bwd, lab.CheckStep(kr.Kernels, st.Name, st.File, nil, d, func() error {
			_, err := st.Plan(s, d)
			return err
		}))
	}
	return append(out, lab.WithInstead(bwd)...)
}

func checkForward(st Step, s Shape, d gpu.DeviceInfo) lab.StepCheck {
	return lab.CheckStep(kr.Kernels, st.Name, st.File, st.Defines, d, func() error {
		_, err := st.Plan(s, d)
		return err
	})
}

// refusedOn are the steps d cannot run, by name (Lesson.RefusedOn; Run cannot name Lesson itself).
func refusedOn(d gpu.DeviceInfo) map[string]lab.StepCheck {
	return lab.Lesson{Steps: StepChecks}.RefusedOn(d)
}

// Refusal is nil when d runs the step (forward or backward, by name), else the refusal
// (gpu.ErrUnsupported, so lab.IsRefusal holds): its need and the step that runs instead.
func Refusal(step string, d gpu.DeviceInfo) error {
	return refusedOn(d)[step].Err() // a step d runs is not in the map: the zero check, nil
}

func init() { Lesson.Steps = StepChecks }

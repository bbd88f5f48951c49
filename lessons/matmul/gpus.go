package matmul

import (
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	km "github.com/cudalessons/cudalessons/kernels/matmul"
)

// StepChecks checks every step of the ladder and every variant the run measures on d, in that
// order, at the article's shape: the need its source declares (with the step's defines on d), then
// its plan. A refused variant names, as the step that runs instead, the fastest ladder step d runs.
func StepChecks(d gpu.DeviceInfo) []lab.StepCheck {
	var out []lab.StepCheck
	for _, st := range Steps {
		out = append(out, checkStep(st, d))
	}
	out = lab.WithInstead(out)
	best := ""
	for _, c := range out {
		if c.Runs() {
			best = c.Step
		}
	}
	for _, st := range Variants {
		c := checkStep(st, d)
		if !c.Runs() {
			c.Instead = best
		}
		out = append(out, c)
	}
	return out
}

func checkStep(st Step, d gpu.DeviceInfo) lab.StepCheck {
	return lab.CheckStep(km.Kernels, st.Name, st.File, st.DefinesOn(d), d, func() error {
		_, err := st.Plan(Article, d)
		return err
	})
}

// refusedOn are the steps d cannot run, by name (Lesson.RefusedOn; Run cannot name Lesson itself).
func refusedOn(d gpu.DeviceInfo) map[string]lab.StepCheck {
	return lab.Lesson{Steps: StepChecks}.RefusedOn(d)
}

// Refusal is nil when d runs the step, else the refusal (gpu.ErrUnsupported, so lab.IsRefusal
// holds): its need and the step that runs instead. Cells about a step return it.
func Refusal(st Step, d gpu.DeviceInfo) error {
	return refusedOn(d)[st.Name].Err() // a step d runs is not in the map: the zero check, nil
}

func init() { Lesson.Steps = StepChecks }

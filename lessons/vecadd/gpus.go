package vecadd

import (
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	kv "github.com/cudalessons/cudalessons/kernels/vecadd"
)

// StepChecks checks the three steps on d. None declares a need or has a limit of the GPU (the grids
// are sized from its SMs): every GPU runs them, and the checks make a future need show up here and
// in Run.
func StepChecks(d gpu.DeviceInfo) []lab.StepCheck {
	var out []lab.StepCheck
	for _, s := range Steps {
		out = append(out, lab.CheckStep(kv.Kernels, s.Name, s.File, nil, d, nil))
	}
	return out
}

// refusedOn are the steps d cannot run, by name (Lesson.RefusedOn; Run cannot name Lesson itself).
func refusedOn(d gpu.DeviceInfo) map[string]lab.StepCheck {
	return lab.Lesson{Steps: StepChecks}.RefusedOn(d)
}

func init() { Lesson.Steps = StepChecks }

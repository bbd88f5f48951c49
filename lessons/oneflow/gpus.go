package oneflow

import (
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	ko "github.com/cudalessons/cudalessons/kernels/oneflow"
)

// StepChecks checks every step the run measures on d, by the name its records carry, in the run's
// order: the elementwise steps, every point of step 3's sweep and its tuned pick, the atomics steps
// and the upsample steps. No source of this lesson declares a need (half and half2 atomics build
// for sm_75: a T4 runs them all) and no plan depends on the GPU's limits (grids are sized from its
// SMs), so every profile runs every step; the checks make a future need show up here and in Run.
func StepChecks(d gpu.DeviceInfo) []lab.StepCheck {
	var out []lab.StepCheck
	add := func(name, file string, defines []string) {
		out = append(out, lab.CheckStep(ko.Kernels, name, file, defines, d, nil))
	}
	for _, s := range MulSteps {
		add(s.Name, s.File, s.Defines)
	}
	for _, s := range InflightSweep() {
		add(s.Name, s.File, s.Defines)
	}
	add(InflightName, InflightDefault.File, InflightDefault.Defines)
	for _, s := range AtomicSteps {
		add(s.Name, s.File, nil)
	}
	for _, s := range UpSteps {
		add(s.Name, s.File, nil)
	}
	return out
}

// refusedOn are the steps d cannot run, by name (Lesson.RefusedOn; Run cannot name Lesson itself).
func refusedOn(d gpu.DeviceInfo) map[string]lab.StepCheck {
	return lab.Lesson{Steps: StepChecks}.RefusedOn(d)
}

// addRefused ends a section's run with a refused record for each of names that d refuses.
func addRefused(run *record.Run, refused map[string]lab.StepCheck, names []string) {
	for _, n := range names {
		if c, no := refused[n]; no {
			run.Add(lab.RefusedRecord(c))
		}
	}
}

func init() { Lesson.Steps = StepChecks }

package lab

import (
	"github.com/cudalessons/cudalessons/helpers/nsight"
	"github.com/cudalessons/cudalessons/results"
)

// ShowProfile shows a lesson's recorded Nsight Compute profiles (results/profiles, made by make
// profile on a GPU): the table of what each profiled step's kernel did (throughputs, hit rates,
// occupancy, bank conflicts, pipe use) and the chart of its warp stall reasons, labelled with the
// GPU and the date. It needs no GPU and no profiler.
func (e *Env) ShowProfile(lesson string) error {
	f, err := nsight.Load(results.Profiles, lesson)
	if err != nil {
		return err
	}
	return nsight.Show(f)
}

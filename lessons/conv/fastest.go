package conv

import "github.com/cudalessons/cudalessons/helpers/gpu"

// FastestStep is the conv a reader runs on their own tensors (NewProblemOn, then Launcher): the
// last step of the ladder (it runs from slow to fast) that computes the plain conv output in dtype
// and whose plan takes s on d. It reports false when no step does.
func FastestStep(s Shape, d gpu.DeviceInfo, dtype string) (Step, bool) {
	for i := len(Steps) - 1; i >= 0; i-- {
		st := Steps[i]
		if st.Fused || st.DType != dtype {
			continue
		}
		if _, err := st.PlanFor(s, d); err == nil {
			return st, true
		}
	}
	return Step{}, false
}

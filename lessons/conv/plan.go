package conv

import (
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
)

func init() { Lesson.Plan = Plan }

// Plan is what Run measures, quick or not: cuDNN and PyTorch, every conv step at AlexNet's first
// layer and the deep layer, the fused steps and the no-ReLU demonstration at AlexNet's, PyTorch's
// cross-check at XShape, and the batch sweep over SweepNs(quick) (quick also checks 1024 random
// outputs at the layers instead of 4096: CheckCount).
func Plan(quick bool, _ gpu.DeviceInfo) []lab.Point {
	a := AlexNet.Short()
	pts := []lab.Point{lab.Headline(CaseAlexNet, a), lab.Headline(CaseFused, a), lab.Headline(CaseDemo, a),
		lab.Headline(CaseDeep, Deep.Short()), lab.Headline(CaseCross, XShape.Short())}
	for _, n := range SweepNs(quick) {
		pts = append(pts, lab.SweepPoint(CaseSweep, sweepShape(n).Short()))
	}
	return pts
}

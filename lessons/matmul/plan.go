package matmul

import (
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
)

func init() { Lesson.Plan = Plan }

// Plan is what Run measures, quick or not: cuBLAS, every step and variant at the article's 4096^3,
// the KernelBench trials at KBShape (quick: 2 trials instead of KBTrials), the awkward shapes,
// and the size sweep over SweepSizes(quick) (cuBLAS at 4096^3 is always one of its points).
func Plan(quick bool, _ gpu.DeviceInfo) []lab.Point {
	a := Article.String()
	pts := []lab.Point{lab.Headline("matmul", a), lab.Headline("variant", a), lab.Headline("kernelbench", KBShape.String()),
		lab.SweepPoint("sweep", a)}
	for _, s := range Awkward {
		pts = append(pts, lab.Headline("nonsquare", s.String()))
	}
	for _, n := range SweepSizes(quick) {
		if n != Article.M {
			pts = append(pts, lab.SweepPoint("sweep", Shape{M: n, N: n, K: n}.String()))
		}
	}
	return pts
}

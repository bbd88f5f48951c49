package giou

import (
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
)

func init() { Lesson.Plan = Plan }

// Plan is what Run measures, quick or not: PyTorch, the host-to-device copies, every step and the
// cross-checks at the article's shape, the gradient checks on GradCheckShapes and the article's
// shape, and the sweep over SweepBs(quick) (quick times the article's per-sample loop 2 times
// instead of 5).
func Plan(quick bool, _ gpu.DeviceInfo) []lab.Point {
	a := ArticleShape.String()
	pts := []lab.Point{lab.Headline(string(KindForward), a), lab.Headline(string(KindTrain), a), lab.Headline(CaseH2D, a),
		lab.Headline(CaseCross, a), lab.Headline(CaseGrad, a)}
	for _, s := range GradCheckShapes {
		pts = append(pts, lab.Headline(CaseGrad, s.String()))
	}
	for _, b := range SweepBs(quick) {
		pts = append(pts, lab.SweepPoint(CaseSweep, Shape{B: b, M: ArticleShape.M}.String()))
	}
	return pts
}

package trilinear

import (
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
)

func init() { Lesson.Plan = Plan }

// Plan is what Run measures, quick or not: the copy, PyTorch and every step at the article's shape,
// PyTorch's cross-check at XShape, the gradient checks on GradCheckShapes, the article's shape and
// N=1000 F=37, and the N and F sweeps (sweepShapes(quick); the article's shape, a point of the F
// sweep, is recorded in both). Quick also checks 1024 random points at the article's shape instead
// of 4096 (CheckRows).
func Plan(quick bool, _ gpu.DeviceInfo) []lab.Point {
	a := ArticleShape.String()
	pts := []lab.Point{lab.Headline(string(KindForward), lab.CopyShape()), lab.Headline(string(KindForward), a),
		lab.Headline(string(KindBwdFeats), a), lab.Headline(string(KindBwdPoints), a), lab.Headline(string(KindTrain), a),
		lab.Headline("crosscheck", XShape.String())}
	for _, s := range append(append([]Shape{}, GradCheckShapes...), ArticleShape, Shape{N: 1000, F: 37}) {
		pts = append(pts, lab.Headline(CaseGrad, s.String()))
	}
	for _, s := range sweepShapes(quick) {
		c := CaseSweepF
		if s.N != ArticleShape.N {
			c = CaseSweepN
		}
		pts = append(pts, lab.SweepPoint(c, s.String()))
		if s == ArticleShape {
			pts = append(pts, lab.SweepPoint(CaseSweepN, s.String()))
		}
	}
	return pts
}

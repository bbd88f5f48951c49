package rwkv

import (
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
)

func init() { Lesson.Plan = Plan }

// Plan is what Run measures, quick or not: PyTorch, every forward and backward step and v5's tile
// sizes at the article's shape, PyTorch's cross-check at XShape, and the T sweep over SweepTs(quick)
// (quick also checks 2048 random rows at the article's shape instead of all: CheckRows).
func Plan(quick bool, _ gpu.DeviceInfo) []lab.Point {
	s := ArticleShape.String()
	pts := []lab.Point{lab.Headline("forward", s), lab.Headline("fwdbwd", s), lab.Headline("backward", s),
		lab.Headline("tile", s), lab.Headline("crosscheck", XShape.String())}
	for _, T := range SweepTs(quick) {
		pts = append(pts, lab.SweepPoint("sweep", Shape{B: ArticleShape.B, C: ArticleShape.C, T: T}.String()))
	}
	return pts
}

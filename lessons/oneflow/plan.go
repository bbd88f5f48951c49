package oneflow

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
)

func init() { Lesson.Plan = Plan }

// Plan is what Run measures, quick or not: the copy, every multiply step, the misaligned one and
// step 3's in-flight sweep at MulN (PyTorch's torch.mul there comes from the size sweep, which has
// MulN in both modes); the dot products at DotN; every upsample step, both ways, at the article's
// shape and the large one; and the size sweep over SweepSizes(quick).
func Plan(quick bool, _ gpu.DeviceInfo) []lab.Point {
	mul := fmt.Sprintf("n=%d", MulN)
	pts := []lab.Point{lab.Headline("mul", lab.CopyShape()), lab.Headline("mul", mul), lab.Headline("mul inflight", mul),
		lab.Headline("atomics", DotShape(DotN)), lab.Headline("drift", DotShape(DotN)),
		lab.Headline("upsample forward", lab.CopyShape())}
	for _, s := range [][4]int{ArticleShape, LargeShape} {
		pts = append(pts, lab.Headline("upsample forward", fmtShape(s)), lab.Headline("upsample backward", fmtShape(s)))
	}
	for _, n := range SweepSizes(quick) {
		pts = append(pts, lab.SweepPoint("mul sweep", fmt.Sprintf("n=%d", n)))
	}
	return pts
}

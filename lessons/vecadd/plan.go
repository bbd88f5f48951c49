package vecadd

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
)

// L2N is the n of the L2-resident measurement of the method table on d: inputs and output together
// half the L2.
func L2N(d gpu.DeviceInfo) int { return max(1<<16, d.L2Bytes/2/12) }

func init() { Lesson.Plan = Plan }

// Plan is what Run measures on d: the copy and every step at TableN and the method table (quick or
// not), and the sweep over SweepSizes(quick).
func Plan(quick bool, d gpu.DeviceInfo) []lab.Point {
	at := func(n int) string { return fmt.Sprintf("n=%d", n) }
	pts := []lab.Point{lab.Headline("add", lab.CopyShape()), lab.Headline("add", at(TableN)),
		lab.Headline("method", at(TableN)), lab.Headline("method", at(L2N(d)))}
	for _, n := range SweepSizes(quick) {
		pts = append(pts, lab.SweepPoint("sweep", at(n)))
	}
	return pts
}

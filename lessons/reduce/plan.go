package reduce

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
)

func init() { Lesson.Plan = Plan }

// LNDims are the normalised dimensions of the article's layer norm: (16, 64, 256, 256) over the
// last three (LNSize elements per sample), as PyTorch is given them.
var LNDims = []int{64, 256, 256}

// lnTorchShape is the shape of a PyTorch layer norm record: the samples, then the normalised dims.
func lnTorchShape(n int, norm []int) string { return fmt.Sprint(append([]int{n}, norm...)) }

// Plan is what Run measures, quick or not. Softmax: the copy, the zeros check, every step and
// PyTorch at the article's (4096, 65536), the short rows, the 16-bit step, the sweep over
// SoftmaxSweep(quick) at SoftmaxTotal elements, and KernelBench's long rows (LongRows). Layer
// norm: the copy, every step, the backward and PyTorch at (16, 64, 256, 256), the stability runs,
// and the sweep over LNSweep(quick) at LNSweepTotal elements.
func Plan(quick bool, _ gpu.DeviceInfo) []lab.Point {
	art := shape(SoftmaxRows, SoftmaxCols)
	pts := []lab.Point{lab.Headline(CaseSoftmax, lab.CopyShape()), lab.Headline(CaseZeros, shape(8, SoftmaxCols)),
		lab.Headline(CaseSoftmax, art), lab.Headline(CaseShortRows, shape(ShortRows[0], ShortRows[1])), lab.Headline(CaseSoftmax16, art)}
	for _, cols := range SoftmaxSweep(quick) {
		pts = append(pts, lab.SweepPoint(CaseSoftmaxSweep, shape(SoftmaxTotal/cols, cols)))
	}
	pts = append(pts, lab.Headline(CaseLongRows, shape(LongRows[0], LongRows[1])))
	pts = append(pts, lab.Headline(CaseLN, lab.CopyShape()), lab.Headline(CaseStability, shape(LNSamples, LNSize)),
		lab.Headline(CaseStability, shape(LNShortStable[0], LNShortStable[1])))
	for _, c := range []string{CaseLN, CaseLNBackward, CaseLNFwdBwd} {
		pts = append(pts, lab.Headline(c, shape(LNSamples, LNSize)), lab.Headline(c, lnTorchShape(LNSamples, LNDims)))
	}
	for _, m := range LNSweep(quick) {
		n := LNSweepTotal / m
		pts = append(pts, lab.SweepPoint(CaseLNSweep, shape(n, m)), lab.SweepPoint(CaseLNSweep, lnTorchShape(n, []int{m})))
	}
	return pts
}

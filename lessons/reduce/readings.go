package reduce

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/lab"
)

// The readings cells of the lesson's two notebooks: what each section's run shows, stated from the
// run on the page (or the recorded run without a GPU), and whether the lesson's claim held there.
// A notebook cell shows them with env.ShowReadings(reduce.Lesson, reduce.SoftmaxReadings()...).

// The steps the readings speak of, by their records' names.
var (
	stepSoftmax3       = SoftmaxSteps[2].Name  // 3 warp shuffles + float4
	stepSoftmax6       = SoftmaxSteps[5].Name  // 6 warp per row
	stepSoftmax7       = SoftmaxSteps[6].Name  // 7 half / bfloat16
	stepSoftmax8       = SoftmaxSteps[7].Name  // 8 any length, read once
	stepSoftmax11      = SoftmaxSteps[10].Name // 11 grid ring, read once
	stepLN2, stepLN3   = LNSteps[1].Name, LNSteps[2].Name
	stepLN4, stepLN5   = LNSteps[3].Name, LNSteps[4].Name
	stepLN6            = LNSteps[5].Name
	stepCluster        = SoftmaxSteps[4].Name // 5 cluster, read once: the profiled step
	metricDSMEM        = "l1tex__m_l1tex2xbar_write_bytes_mem_dshared.sum"
	metricDRAMRead     = "dram__bytes_read.sum"
	formatRelL2        = func(v float64) string { return fmt.Sprintf("relative L2 error %.2g", v) }
	formatMB           = func(v float64) string { return fmt.Sprintf("%.1f MB", v/1e6) }
	formatTimesX       = func(v float64) string { return fmt.Sprintf("%.3f times the bytes of x", v) }
	xBytes             = float64(SoftmaxRows) * SoftmaxCols * 4 // the profiled launch's x: (4096, 65536) floats
	copyClaimThreshold = 85.0                                   // the targets' "near the copy bandwidth"
)

// SoftmaxReadings are the softmax measurements' readings: the read-once step at the article's shape
// against the copy bandwidth and both PyTorch baselines, the three-pass step's cap, KernelBench's own
// long rows, the short rows and the 16-bit rows.
func SoftmaxReadings() []lab.Reading {
	return []lab.Reading{
		{What: "Step 8 at (4096, 65536), share of the copy bandwidth for the minimum traffic", Value: lab.BandwidthShare(CaseSoftmax, stepSoftmax8), Format: lab.Percent,
			Claim: "close to the copy bandwidth (85% or more)", Holds: lab.AtLeast(copyClaimThreshold),
			Why: "Look at its compile report (a spill shows in the local column) and at the sweep: the cluster's blocks may not fit this GPU's SMs two at a time."},
		{What: "Step 8 against torch.compile, same run", Value: lab.Ratio(CaseSoftmax, Compiled, stepSoftmax8), Format: lab.Speedup,
			Claim: "faster than torch.compile", Holds: lab.Above(1)},
		{What: "Step 8 against PyTorch eager, same run", Value: lab.Ratio(CaseSoftmax, Eager, stepSoftmax8), Format: lab.Speedup,
			Claim: "faster than eager PyTorch", Holds: lab.Above(1)},
		{What: "Step 3 (three reads, one write), share of the copy bandwidth for the minimum traffic", Value: lab.BandwidthShare(CaseSoftmax, stepSoftmax3), Format: lab.Percent,
			Claim: "capped near half by its four passes over memory", Holds: lab.Below(55)},
		{What: fmt.Sprintf("Step 11 on KernelBench's (%d, %d) against torch.compile", LongRows[0], LongRows[1]), Value: lab.Ratio(CaseLongRows, Compiled, stepSoftmax11), Format: lab.Speedup,
			Claim: "faster than torch.compile on rows this long", Holds: lab.Above(1)},
		{What: fmt.Sprintf("Short rows (%d, %d): step 6 (a warp per row) against step 3 (a block per row)", ShortRows[0], ShortRows[1]), Value: lab.Ratio(CaseShortRows, stepSoftmax3, stepSoftmax6), Format: lab.Speedup,
			Claim: "a warp per row is faster than a block per row here", Holds: lab.Above(1)},
		{What: "Short rows: step 6 against PyTorch eager (the lesson claims nothing here: eager may win)", Value: lab.Ratio(CaseShortRows, Eager, stepSoftmax6), Format: lab.Speedup},
		{What: "Half precision: step 7 against torch.compile in half", Value: ratioOfDType(CaseSoftmax16, F16, Compiled, stepSoftmax7), Format: lab.Speedup,
			Claim: "faster than torch.compile in half", Holds: lab.Above(1)},
	}
}

// ClusterProfileReadings cite the profile of the cluster step (the Profile cell's on this GPU, else
// the recorded one): the row read once from DRAM, and the pairs exchanged through distributed
// shared memory, a small fraction of that traffic.
func ClusterProfileReadings() []lab.Reading {
	return []lab.Reading{
		{What: "Step 5, DRAM bytes read per byte of x (ncu " + metricDRAMRead + ")", Value: perXByte(lab.ProfileMetric(stepCluster, metricDRAMRead)), Format: formatTimesX,
			Claim: "x is read from DRAM once", Holds: lab.Below(1.05),
			Why: "A second read of the row would show here as about 2."},
		{What: "Step 5, bytes through distributed shared memory (ncu " + metricDSMEM + ")", Value: lab.ProfileMetric(stepCluster, metricDSMEM), Format: formatMB},
		{What: "Step 5, distributed shared memory traffic as a share of its DRAM reads", Value: dsmemShare, Format: lab.Percent,
			Claim: "the blocks of a cluster exchange only their (max, sum) pairs: a small fraction (under 5%) of the row's bytes", Holds: lab.Below(5)},
	}
}

// ShowProfileReadings is the readings cell of the cluster step's profile: ClusterProfileReadings on
// the profile the Profile cell kept on this GPU (else the recorded one), labelled with the profile's
// GPU and date rather than the timed run's.
func ShowProfileReadings(env *lab.Env) error {
	return env.ShowProfileReadings(Lesson, ClusterProfileReadings()...)
}

// LayerNormReadings are the layer norm measurements' readings: the fused step against both PyTorch
// baselines, Welford's cost, the read-once step at the article's shape, the mean-1000 stability test
// and the short samples.
func LayerNormReadings() []lab.Reading {
	shortSize := int64(WarpRowMax)
	return []lab.Reading{
		{What: "Step 4 at (16, 64, 256, 256) against torch.compile, same run", Value: lab.Ratio(CaseLN, Compiled, stepLN4), Format: lab.Speedup,
			Claim: "at least as fast as torch.compile", Holds: lab.AtLeast(1)},
		{What: "Step 4 against eager F.layer_norm, same run", Value: lab.Ratio(CaseLN, Eager, stepLN4), Format: lab.Speedup,
			Claim: "far faster than eager (25 times or more)", Holds: lab.AtLeast(25)},
		{What: "Step 3 (Welford) against step 2 (the article's sum of squares): step 2's time over step 3's", Value: lab.Ratio(CaseLN, stepLN2, stepLN3), Format: lab.Speedup,
			Claim: "Welford costs only a little more time (within a quarter of step 2's)", Holds: lab.AtLeast(0.8)},
		{What: "Step 6 (x read once) against step 4: step 4's time over step 6's", Value: lab.Ratio(CaseLN, stepLN4, stepLN6), Format: lab.Speedup,
			Claim: "slower than step 4 at this shape, where it reads w and b for every sample", Holds: lab.Below(1)},
		{What: "Mean 1000, std 0.1: step 2 (the article's formula)", Value: relL2(CaseStability, stepLN2), Format: formatRelL2,
			Claim: fmt.Sprintf("it fails (over the tolerance of %.1e)", ShiftedTolerance.RelL2), Holds: lab.Above(ShiftedTolerance.RelL2)},
		{What: "Mean 1000, std 0.1: step 3 (Welford)", Value: relL2(CaseStability, stepLN3), Format: formatRelL2,
			Claim: fmt.Sprintf("it stays within the tolerance of %.1e", ShiftedTolerance.RelL2), Holds: atMost(ShiftedTolerance.RelL2)},
		{What: fmt.Sprintf("Short samples (%d x %d): step 5 against eager F.layer_norm", LNSweepTotal/WarpRowMax, WarpRowMax), Value: ratioAt(CaseLNSweep, shortSize, Eager, stepLN5), Format: lab.Speedup,
			Claim: "at least as fast as eager", Holds: lab.AtLeast(1)},
		{What: "Forward and backward: ours against torch.compile, same run", Value: lab.Ratio(CaseLNFwdBwd, Compiled, "ours (step 4 + backward)"), Format: lab.Speedup},
	}
}

func atMost(x float64) func(float64) bool { return func(v float64) bool { return v <= x } }

// relL2 is a reading's value: the relative L2 error of variant's record of case c.
func relL2(c, variant string) func(lab.Figures) (float64, bool) {
	return func(f lab.Figures) (float64, bool) {
		if f.Run == nil {
			return 0, false
		}
		r, ok := f.Run.Find(c, variant, 0)
		return r.RelL2, ok
	}
}

// ratioAt is lab.Ratio at one size of case c (a sweep): base's median time over variant's.
func ratioAt(c string, size int64, base, variant string) func(lab.Figures) (float64, bool) {
	return func(f lab.Figures) (float64, bool) {
		if f.Run == nil {
			return 0, false
		}
		b, bok := f.Run.Find(c, base, size)
		v, vok := f.Run.Find(c, variant, size)
		if !bok || !vok || b.MedianMS <= 0 || v.MedianMS <= 0 {
			return 0, false
		}
		return b.MedianMS / v.MedianMS, true
	}
}

// ratioOfDType is lab.Ratio for the records of one dtype of case c (the 16-bit case has a record
// per dtype under each name).
func ratioOfDType(c string, d DType, base, variant string) func(lab.Figures) (float64, bool) {
	return func(f lab.Figures) (float64, bool) {
		if f.Run == nil {
			return 0, false
		}
		var b, v float64
		for _, r := range f.Run.Select(c) {
			if r.DType != string(d) {
				continue
			}
			switch r.Variant {
			case base:
				b = r.MedianMS
			case variant:
				v = r.MedianMS
			}
		}
		if b <= 0 || v <= 0 {
			return 0, false
		}
		return b / v, true
	}
}

// perXByte divides a profile's byte count by the bytes of the profiled launch's x.
func perXByte(bytes func(lab.Figures) (float64, bool)) func(lab.Figures) (float64, bool) {
	return func(f lab.Figures) (float64, bool) {
		v, ok := bytes(f)
		return v / xBytes, ok
	}
}

// dsmemShare is the cluster step's distributed shared memory bytes as a percentage of its DRAM reads.
func dsmemShare(f lab.Figures) (float64, bool) {
	d, dok := lab.ProfileMetric(stepCluster, metricDSMEM)(f)
	r, rok := lab.ProfileMetric(stepCluster, metricDRAMRead)(f)
	if !dok || !rok || r <= 0 {
		return 0, false
	}
	return 100 * d / r, true
}

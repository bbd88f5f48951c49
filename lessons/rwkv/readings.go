package rwkv

import (
	"math"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// LadderReadings are the readings of section 11 (the forward ladder at the article's shape): the
// baseline, the article's steps, ours, and the tensor-core steps, each with the claim its section
// makes.
func LadderReadings() []lab.Reading {
	return []lab.Reading{
		{What: "torch.compile against eager PyTorch, forward", Value: lab.Ratio("forward", "PyTorch", "torch.compile"), Format: lab.Speedup,
			Claim: "torch.compile does not rescue the expression: it stays within 10% of eager PyTorch", Holds: within(0.9, 1.1)},
		{What: "v3 batch group (the article's last step) against PyTorch", Value: lab.Ratio("forward", "PyTorch", "v3 batch group"), Format: lab.Speedup,
			Claim: "the article's ladder ends faster than PyTorch", Holds: lab.Above(1)},
		{What: "batch grouping's gain (v2 to v3) over the largest gain of the article's other steps (v0 to v1, v1 to v2)", Value: batchGroupingGain, Format: lab.Speedup,
			Claim: "batch grouping is the step that matters most", Holds: lab.Above(1)},
		{What: "v4 balanced against v3", Value: lab.Ratio("forward", "v3 batch group", "v4 balanced"), Format: lab.Speedup,
			Claim: "balancing the triangle makes v3 faster", Holds: lab.Above(1)},
		{What: "v4 balanced, share of the FP32 peak", Value: lab.PeakShare("forward", "v4 balanced"), Format: lab.Percent},
		{What: "v5 register tile against v4", Value: lab.Ratio("forward", "v4 balanced", "v5 register tile"), Format: lab.Speedup,
			Claim: "v5's fewer loads per FMA do not make it faster than v4 at its low occupancy", Holds: lab.Below(1)},
		{What: "v8 against v6 (both TF32 on the tensor cores)", Value: lab.Ratio("forward", "v6 tensor core tf32", "v8 tensor core mma"), Format: lab.Speedup,
			Claim: "feeding the tensor cores through mma.sync beats WMMA", Holds: lab.Above(1)},
		{What: "v8 against v4, the best exact-FP32 step", Value: lab.Ratio("forward", "v4 balanced", "v8 tensor core mma"), Format: lab.Speedup,
			Claim: "the tensor cores beat the CUDA cores on this operation", Holds: lab.Above(1)},
		{What: "v8 against PyTorch", Value: lab.Ratio("forward", "PyTorch", "v8 tensor core mma"), Format: lab.Speedup},
		{What: "v8, share of the TF32 tensor-core peak", Value: lab.PeakShare("forward", "v8 tensor core mma"), Format: lab.Percent},
		{What: "v6's error over v7's (rel L2 against float64)", Value: errorRatio("forward", "v6 tensor core tf32", "v7 tensor core 3xtf32"), Format: lab.Speedup,
			Detail: relL2s("forward", "v6 tensor core tf32", "v7 tensor core 3xtf32", "v4 balanced"),
			Claim:  "the 3xTF32 split gains little accuracy (less than tenfold): the tensor core's float32 accumulation is the limit", Holds: lab.Below(10)},
	}
}

// BackwardReadings are the readings of section 13 (the backward ladder): the best backward step
// against PyTorch's backward, and torch.compile's.
func BackwardReadings() []lab.Reading {
	return []lab.Reading{
		{What: "bwd v4 register tile against PyTorch's backward", Value: lab.Ratio("backward", "PyTorch", "bwd v4 register tile"), Format: lab.Speedup,
			Claim: "the backward kernels beat PyTorch's backward", Holds: lab.Above(1)},
		{What: "bwd v4 register tile against bwd v0 naive", Value: lab.Ratio("backward", "bwd v0 naive", "bwd v4 register tile"), Format: lab.Speedup},
		{What: "torch.compile against eager PyTorch, backward", Value: lab.Ratio("backward", "PyTorch", "torch.compile"), Format: lab.Speedup,
			Claim: "torch.compile stays within 10% of eager PyTorch", Holds: within(0.9, 1.1)},
	}
}

// ProfileReadings cite the profile of v4 (Profile): how busy its FMA pipe and its shared-memory
// path (L1/TEX) were, and which of the two limits it.
func ProfileReadings() []lab.Reading {
	const step = "v4 balanced"
	return []lab.Reading{
		{What: "v4, FMA pipe busy (Nsight Compute, % of its peak)", Value: lab.ProfileMetric(step, fmaPipe), Format: lab.Percent},
		{What: "v4, issue slots busy", Value: lab.ProfileMetric(step, "Issue Slots Busy"), Format: lab.Percent},
		{What: "v4, L1/TEX (shared memory) throughput", Value: lab.ProfileMetric(step, "L1/TEX Cache Throughput"), Format: lab.Percent},
		{What: "v4's L1/TEX throughput over its FMA pipe's", Value: func(f lab.Figures) (float64, bool) {
			l1, ok1 := lab.ProfileMetric(step, "L1/TEX Cache Throughput")(f)
			fma, ok2 := lab.ProfileMetric(step, fmaPipe)(f)
			if !ok1 || !ok2 || fma <= 0 {
				return 0, false
			}
			return l1 / fma, true
		}, Format: lab.Speedup,
			Claim: "balanced v4 is held back by its loads, not its FMAs: the shared-memory path is busier than the FMA pipe", Holds: lab.Above(1)},
	}
}

const fmaPipe = "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"

// within is a claim's test: the value lies in [lo, hi].
func within(lo, hi float64) func(float64) bool {
	return func(v float64) bool { return v >= lo && v <= hi }
}

// batchGroupingGain is v2/v3 over the larger of v0/v1 and v1/v2 (forward medians).
func batchGroupingGain(f lab.Figures) (float64, bool) {
	g := func(a, b string) (float64, bool) { return lab.Ratio("forward", a, b)(f) }
	v3, ok3 := g("v2 float4", "v3 batch group")
	v1, ok1 := g("v0 naive", "v1 shared")
	v2, ok2 := g("v1 shared", "v2 float4")
	if !ok1 || !ok2 || !ok3 {
		return 0, false
	}
	return v3 / math.Max(v1, v2), true
}

// errorRatio is a reading's value: the rel L2 error of variant a over that of variant b (case c).
func errorRatio(c, a, b string) func(lab.Figures) (float64, bool) {
	return func(f lab.Figures) (float64, bool) {
		if f.Run == nil {
			return 0, false
		}
		ra, ok1 := f.Run.Find(c, a, 0)
		rb, ok2 := f.Run.Find(c, b, 0)
		if !ok1 || !ok2 || ra.RelL2 <= 0 || rb.RelL2 <= 0 {
			return 0, false
		}
		return ra.RelL2 / rb.RelL2, true
	}
}

// relL2s is a reading's detail: the rel L2 errors of the variants of case c.
func relL2s(c string, variants ...string) func(lab.Figures) string {
	return func(f lab.Figures) string {
		if f.Run == nil {
			return ""
		}
		s := ""
		for _, v := range variants {
			if r, ok := f.Run.Find(c, v, 0); ok {
				if s != "" {
					s += ", "
				}
				s += v + " " + show.Num(r.RelL2)
			}
		}
		if s == "" {
			return ""
		}
		return "rel L2: " + s
	}
}

package giou

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/lab"
)

// The readings cells of the notebook: each section's figures from the run on the page (the
// recorded run without a GPU), the lesson's claim about them, and whether it held
// (lab.Env.ShowReadings).

// ProfiledStep is the step whose Nsight Compute profile the notebook shows and its readings cite.
const ProfiledStep = "1 article"

// Profile metrics the readings cite (results/profiles/06_giou.json): the Speed Of Light section's
// lines and the long-scoreboard stall (warps waiting on global memory).
const (
	DurationMetric = "Duration"
	SMThroughput   = "Compute (SM) Throughput"
	DRAMThroughput = "DRAM Throughput"
	CyclesPerIssue = "Warp Cycles Per Issued Instruction"
	LongScoreboard = "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"
)

var fw, tr = string(KindForward), string(KindTrain)

// PyTorchReadings are the figures of the article's three PyTorch variants on this batch: each
// removes launches, so each is faster than the one before, as in the article.
func PyTorchReadings() []lab.Reading {
	return []lab.Reading{
		{What: "concatenated against the per-sample loop", Value: lab.Ratio(fw, Loop, Concat), Format: lab.Speedup,
			Claim: "one call on the concatenated boxes is faster than the loop", Holds: lab.Above(1)},
		{What: "padded + mask against concatenated", Value: lab.Ratio(fw, Concat, Eager), Format: lab.Speedup,
			Claim: "the padded loss is faster than the concatenated one", Holds: lab.Above(1)},
		{What: "torch.compile of the padded loss against eager", Value: lab.Ratio(fw, Eager, Compiled), Format: lab.Speedup},
	}
}

// LaunchReadings are the figures of the article's kernel and of its profile: how long the kernel
// itself lasts, how little of the GPU it uses, and what its warps wait on.
func LaunchReadings() []lab.Reading {
	return []lab.Reading{
		{What: "step 1 (the article's kernel and its second pass) against eager padded + mask", Value: lab.Ratio(fw, Eager, ProfiledStep), Format: lab.Speedup,
			Claim: "one kernel in place of about thirty is faster", Holds: lab.Above(1)},
		{What: "step 1's kernel under the profiler, its duration", Value: lab.ProfileMetric(ProfiledStep, DurationMetric), Format: micros, Detail: lab.ProfiledOn},
		{What: "step 1's busiest unit (the larger of SM and DRAM throughput), % of its peak", Value: busiest, Format: lab.Percent, Detail: lab.ProfiledOn,
			Claim: "the kernel is too short to load the GPU: neither the SMs nor DRAM reaches half its peak", Holds: lab.Below(50)},
		{What: "share of a warp's cycles spent waiting on global memory (long scoreboard)", Value: longScoreboardShare, Format: lab.Percent, Detail: lab.ProfiledOn,
			Claim: "the warps spend most of their short lives waiting on memory's latency, not computing", Holds: lab.Above(50)},
	}
}

// micros formats a duration in ns as microseconds.
func micros(ns float64) string { return fmt.Sprintf("%.1f µs", ns/1e3) }

func busiest(f lab.Figures) (float64, bool) {
	sm, ok1 := lab.ProfileMetric(ProfiledStep, SMThroughput)(f)
	dr, ok2 := lab.ProfileMetric(ProfiledStep, DRAMThroughput)(f)
	return max(sm, dr), ok1 && ok2
}

func longScoreboardShare(f lab.Figures) (float64, bool) {
	ls, ok1 := lab.ProfileMetric(ProfiledStep, LongScoreboard)(f)
	cpi, ok2 := lab.ProfileMetric(ProfiledStep, CyclesPerIssue)(f)
	if !ok1 || !ok2 || cpi <= 0 {
		return 0, false
	}
	return 100 * ls / cpi, true
}

// SkipReadings are the figures of the conditional skip against the article's kernel.
func SkipReadings() []lab.Reading {
	return []lab.Reading{
		{What: "step 2 (the conditional skip) against step 1", Value: lab.Ratio(fw, ProfiledStep, "2 article skip"), Format: lab.Speedup,
			Claim: "skipping the padded slots' arithmetic changes almost nothing (within 15%)", Holds: lab.Between(1/1.15, 1.15)},
	}
}

// BlockMeanReadings are the figures of step 3 (one block per image, straight to the mean) and of
// step 4's 16-bit boxes.
func BlockMeanReadings() []lab.Reading {
	return []lab.Reading{
		{What: "step 3 against step 1", Value: lab.Ratio(fw, ProfiledStep, "3 block mean"), Format: lab.Speedup,
			Claim: "reading only the valid boxes, with no second pass, is faster than the article's kernel", Holds: lab.Above(1)},
		{What: "step 3 against torch.compile's padded loss", Value: lab.Ratio(fw, Compiled, "3 block mean"), Format: lab.Speedup,
			Claim: "step 3 is faster than torch.compile", Holds: lab.Above(1)},
		{What: "step 4 half against step 3 (float)", Value: lab.Ratio(fw, "3 block mean", "4 half"), Format: lab.Speedup,
			Claim: "16-bit boxes take about the time of float ones (within 25%): the valid boxes are a few KiB", Holds: lab.Between(0.8, 1.25)},
		{What: "step 4 bfloat16 against step 3 (float)", Value: lab.Ratio(fw, "3 block mean", "4 bfloat16"), Format: lab.Speedup,
			Claim: "the same for bfloat16", Holds: lab.Between(0.8, 1.25)},
	}
}

// TrainReadings are the figures of the fused loss and gradient (steps 5 and 6) and of step 6's
// loss alone.
func TrainReadings() []lab.Reading {
	return []lab.Reading{
		{What: "step 6 (a warp per image) against step 3, the loss alone", Value: lab.Ratio(fw, "3 block mean", "6 warp per image"), Format: lab.Speedup,
			Claim: "one ticket per eight images makes step 6 the fastest loss", Holds: lab.Above(1)},
		{What: "step 6's fused loss and gradient against eager autograd", Value: lab.Ratio(tr, EagerFwdBwd, "6 warp fwd+bwd"), Format: lab.Speedup,
			Claim: "at least 10x faster than eager padded forward and backward", Holds: lab.AtLeast(10)},
		{What: "step 6's fused loss and gradient against torch.compile's", Value: lab.Ratio(tr, CompiledFwdBwd, "6 warp fwd+bwd"), Format: lab.Speedup,
			Claim: "faster than torch.compile's forward and backward", Holds: lab.Above(1)},
		{What: "step 6 against step 5 (a block per image), loss and gradient", Value: lab.Ratio(tr, "5 fused fwd+bwd", "6 warp fwd+bwd"), Format: lab.Speedup,
			Claim: "eight times fewer blocks and tickets make step 6 faster", Holds: lab.Above(1)},
	}
}

// TransferReadings are the figures of the targets' host-to-device copies.
func TransferReadings() []lab.Reading {
	return []lab.Reading{
		{What: "one padded copy against one copy per image", Value: lab.Ratio(CaseH2D, Ragged, Padded), Format: lab.Speedup,
			Claim: "one copy of the padded batch is faster than 1024 small ones, although it moves far more bytes", Holds: lab.Above(1)},
	}
}

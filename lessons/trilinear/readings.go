package trilinear

import (
	"github.com/cudalessons/cudalessons/helpers/lab"
)

// The readings cells of the notebook: each section's figures from the run on the page (the
// recorded run without a GPU), the lesson's claim about them, and whether it held
// (lab.Env.ShowReadings).

// ProfiledStep is the step whose Nsight Compute profile the notebook shows and its readings cite.
const ProfiledStep = "3 float4"

// Profile metrics the readings cite (results/profiles/07_trilinear.json).
const (
	L2ReadHitRate = "lts__t_sector_op_read_hit_rate.pct" // loads that hit in L2, % of sectors read
	L2HitRate     = "L2 Hit Rate"                        // the Memory Workload Analysis line (loads and stores)
	DRAMRead      = "dram__bytes_read.sum"
)

var fwd = string(KindForward)

// ForwardReadings are the figures of steps 1 and 2: the article's kernel against PyTorch, and what
// coalescing alone does.
func ForwardReadings() []lab.Reading {
	return []lab.Reading{
		{What: "step 1 (the article's kernel) against PyTorch eager", Value: lab.Ratio(fwd, Eager, "1 article"), Format: lab.Speedup,
			Claim: "the article's kernel is ahead of PyTorch eager", Holds: lab.Above(1)},
		{What: "step 1's share of the copy bandwidth", Value: lab.BandwidthShare(fwd, "1 article"), Format: lab.Percent},
		{What: "step 2 (coalesced) against step 1", Value: lab.Ratio(fwd, "1 article", "2 coalesced"), Format: lab.Speedup,
			Claim: "coalesced loads are faster than the article's scattered ones", Holds: lab.Above(1)},
		{What: "step 2's share of the copy bandwidth", Value: lab.BandwidthShare(fwd, "2 coalesced"), Format: lab.Percent,
			Claim: "coalescing alone takes the forward to at least 85% of the copy bandwidth", Holds: lab.AtLeast(85)},
		{What: "step 2 against step 1 at F = 255, where rows no longer start on sector boundaries", Value: lab.RatioAt(CaseSweepF, "1 article", "2 coalesced", 255), Format: lab.Speedup,
			Claim: "there the article's kernel falls far behind (step 2 at least 1.5x faster)", Holds: lab.AtLeast(1.5)},
	}
}

// Float4Readings are the figures of step 3 and of its profile: what float4 adds at the article's
// shape, and how the gathers meet L2 and DRAM.
func Float4Readings() []lab.Reading {
	return []lab.Reading{
		{What: "step 3 (float4) against step 2", Value: lab.Ratio(fwd, "2 coalesced", ProfiledStep), Format: lab.Speedup,
			Claim: "float4 adds little at this size (within 10%): step 2 already keeps enough bytes in flight", Holds: lab.Between(1/1.1, 1.1)},
		{What: "step 3 against torch.compile", Value: lab.Ratio(fwd, Compiled, ProfiledStep), Format: lab.Speedup,
			Claim: "faster than torch.compile, measured in the same run", Holds: lab.Above(1)},
		{What: "L2 hit rate of step 3's loads (the profile above)", Value: lab.ProfileMetric(ProfiledStep, L2ReadHitRate), Format: lab.Percent, Detail: lab.ProfiledOn,
			Claim: "feats is read once, so the gathers' loads miss L2 (hit rate below 50%): nothing there to reuse", Holds: lab.Below(50)},
		{What: "L2 hit rate of all of step 3's L2 traffic", Value: lab.ProfileMetric(ProfiledStep, L2HitRate), Format: lab.Percent, Detail: lab.ProfiledOn},
		{What: "DRAM bytes step 3 read, % of the minimum (feats and points once)", Value: dramOverMinimum, Format: lab.Percent, Detail: lab.ProfiledOn,
			Claim: "each byte comes from DRAM once: within 5% of the minimum", Holds: lab.Between(95, 105)},
	}
}

// dramOverMinimum is the DRAM bytes the profiled step read over the bytes of feats and points at
// the article's shape, in %.
func dramOverMinimum(f lab.Figures) (float64, bool) {
	b, ok := lab.ProfileMetric(ProfiledStep, DRAMRead)(f)
	s := ArticleShape
	minimum := float64(s.N) * float64(8*s.F+3) * 4
	if !ok || b <= 0 {
		return 0, false
	}
	return 100 * b / minimum, true
}

// HalfReadings are the figures of step 4's 16-bit storage against float32's step 3.
func HalfReadings() []lab.Reading {
	return []lab.Reading{
		{What: "step 4 half against step 3 (float32)", Value: lab.Ratio(fwd, ProfiledStep, "4 half"), Format: lab.Speedup,
			Claim: "half the bytes about halve the time (1.6x to 2.4x)", Holds: lab.Between(1.6, 2.4)},
		{What: "step 4 bfloat16 against step 3 (float32)", Value: lab.Ratio(fwd, ProfiledStep, "4 bfloat16"), Format: lab.Speedup,
			Claim: "the same for bfloat16", Holds: lab.Between(1.6, 2.4)},
	}
}

// BackwardReadings are the figures of the backward steps and the fused training step.
func BackwardReadings() []lab.Reading {
	return []lab.Reading{
		{What: "step 5 (dfeats) against eager's backward", Value: lab.Ratio(string(KindBwdFeats), Eager+" backward", "5 backward feats"), Format: lab.Speedup,
			Claim: "at least 10x faster than autograd's backward", Holds: lab.AtLeast(10)},
		{What: "step 6 (dpoints) against eager forward and backward of both inputs", Value: lab.Ratio(string(KindBwdPoints), Eager+" forward+backward, feats and points", "6 backward points"), Format: lab.Speedup},
		{What: "step 7 (fused training step) against steps 3, 5 and 6 run separately", Value: lab.Ratio(string(KindTrain), Separate, "7 fused train step"), Format: lab.Speedup,
			Claim: "one pass beats the three kernels", Holds: lab.Above(1)},
		{What: "step 7 against PyTorch's eager training step", Value: lab.Ratio(string(KindTrain), Eager+" training step", "7 fused train step"), Format: lab.Speedup,
			Claim: "by a wide margin (at least 5x)", Holds: lab.AtLeast(5)},
	}
}

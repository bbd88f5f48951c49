package matmul

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// The ncu metrics the profile readings cite.
const (
	conflictsLd  = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
	wavefrontsLd = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
	fmaPipe      = "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"
	tensorPipe   = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
)

// BankReadings cite the profiles of steps 6 and 7 (Profile): the share of each one's shared-memory
// load wavefronts that bank conflicts added, and how busy each keeps the FMA pipe.
func BankReadings() []lab.Reading {
	return []lab.Reading{
		{What: "step 6, bank conflicts per shared-load wavefront (Nsight Compute)", Value: conflictShare("6"), Format: percent0},
		{What: "step 7, bank conflicts per shared-load wavefront", Value: conflictShare("7"), Format: percent0,
			Claim: "the XOR swizzle leaves step 7's shared loads (almost) free of bank conflicts: under 1% of their wavefronts", Holds: lab.Below(1)},
		{What: "step 6, FMA pipe busy", Value: lab.ProfileMetric("6", fmaPipe), Format: percent0},
		{What: "step 7, FMA pipe busy", Value: lab.ProfileMetric("7", fmaPipe), Format: percent0},
		{What: "step 7's FMA pipe use over step 6's", Value: profileRatio("7", "6", fmaPipe), Format: lab.Speedup,
			Claim: "step 7 keeps the FMA pipe busier than step 6", Holds: lab.Above(1)},
	}
}

// TensorReadings cite the profile of step 8 (Profile): how busy mma.sync keeps the tensor pipe,
// against the FMA pipe. (Its share of the TF32 peak in the run is among the LadderReadings.)
func TensorReadings() []lab.Reading {
	return []lab.Reading{
		{What: "step 8, tensor pipe busy (Nsight Compute, % of its peak)", Value: lab.ProfileMetric("8", tensorPipe), Format: percent0},
		{What: "step 8, FMA pipe busy", Value: lab.ProfileMetric("8", fmaPipe), Format: percent0},
		{What: "step 8's tensor pipe over its FMA pipe", Value: profileRatio("8", "8", tensorPipe, fmaPipe), Format: lab.Speedup,
			Claim: "the multiply-adds moved to the tensor cores: the tensor pipe is busier than the FMA pipe", Holds: lab.Above(1)},
	}
}

// SplitReadings are the readings of section 11 (the splits at 4096^3): speed against cuBLAS float32,
// error against cuBLAS float32's own, and what the two-level accumulation and the formats change.
func SplitReadings() []lab.Reading {
	return []lab.Reading{
		{What: "fp16x3 (step 9) against cuBLAS fp32", Value: lab.Ratio("matmul", TorchFP32, "9 fp16x3 split"), Format: lab.Speedup,
			Claim: "the fp16x3 split beats cuBLAS float32", Holds: lab.Above(1)},
		{What: "fp16x3's rel L2 error over cuBLAS fp32's", Value: errorRatio("9 fp16x3 split", TorchFP32), Format: lab.Speedup,
			Detail: relL2s("9 fp16x3 split", TorchFP32),
			Claim:  "its error is no worse than a few times (3x) cuBLAS float32's own", Holds: lab.Below(3)},
		{What: "fp16x3 with one accumulator against fp16x3", Value: ratio("9 fp16x3 split", "9 fp16x3, one accumulator"), Format: lab.Speedup,
			Claim: "without the two-level accumulation it is faster", Holds: lab.Above(1)},
		{What: "fp16x3 with one accumulator, its error over fp16x3's", Value: errorRatio("9 fp16x3, one accumulator", "9 fp16x3 split"), Format: lab.Speedup,
			Claim: "and less accurate: the truncating accumulation limits accuracy", Holds: lab.Above(1)},
		{What: "3xTF32 (step 8b) against fp16x3", Value: ratio("8b 3xTF32 split", "9 fp16x3 split"), Format: lab.Speedup,
			Claim: "fp16x3 is faster than 3xTF32", Holds: lab.Above(1)},
		{What: "bf16x3's error over fp16x3's", Value: errorRatio("9 bf16x3 split", "9 fp16x3 split"), Format: lab.Speedup,
			Claim: "bf16x3's 16 bits of each input show in its error", Holds: lab.Above(1)},
	}
}

// LadderReadings are the closing readings: the CUDA-core ladder, TF32, and Multiply off the tiles.
func LadderReadings() []lab.Reading {
	return []lab.Reading{
		{What: "step 2 (coalesced) against step 1", Value: lab.Ratio("matmul", "1 naive", "2 coalesced"), Format: lab.Speedup,
			Claim: "coalescing alone makes the kernel several (at least 3) times faster", Holds: lab.Above(3)},
		{What: "the smallest gain of a CUDA-core step over the one before (steps 1 to 7)", Value: smallestGain, Format: lab.Speedup, Detail: smallestGainStep,
			Claim: "each step from the naive kernel to step 7 is faster than the one before", Holds: lab.Above(1)},
		{What: "step 7 against cuBLAS fp32", Value: lab.Ratio("matmul", TorchFP32, "7 warp tile"), Format: lab.Speedup,
			Claim: "step 7 reaches most (over half) of cuBLAS float32's speed", Holds: lab.Above(0.5)},
		{What: "step 7, share of the FP32 peak", Value: lab.PeakShare("matmul", "7 warp tile"), Format: lab.Percent},
		{What: "step 8 (TF32, mma.sync) against step 7", Value: lab.Ratio("matmul", "7 warp tile", "8 tensor core tf32"), Format: lab.Speedup,
			Claim: "TF32 on the tensor cores is faster than any float32 step", Holds: lab.Above(1)},
		{What: "step 8, share of the TF32 tensor-core peak", Value: lab.PeakShare("matmul", "8 tensor core tf32"), Format: lab.Percent},
		{What: "step 8 against cuBLAS TF32", Value: lab.Ratio("matmul", TorchTF32, "8 tensor core tf32"), Format: lab.Speedup,
			Claim: "mma.sync stays short of cuBLAS TF32, which uses wgmma", Holds: lab.Below(1)},
		{What: "Multiply off the tiles against cuBLAS fp32 (geometric mean over the awkward shapes)", Value: offTiles, Format: lab.Speedup,
			Claim: "Multiply reaches most (over half) of cuBLAS fp32's speed on awkward shapes", Holds: lab.Above(0.5),
			Why: "At the smallest shapes cuBLAS's own time moves between runs: rerun before concluding."},
	}
}

// percent0 is lab.Percent that writes a zero as 0.0% (a count that is zero is a finding).
func percent0(v float64) string {
	if v == 0 {
		return "0.0%"
	}
	return lab.Percent(v)
}

// conflictShare is a reading's value: a step's shared-load bank conflicts as a share (%) of its
// shared-load wavefronts.
func conflictShare(step string) func(lab.Figures) (float64, bool) {
	return func(f lab.Figures) (float64, bool) {
		c, ok1 := lab.ProfileMetric(step, conflictsLd)(f)
		w, ok2 := lab.ProfileMetric(step, wavefrontsLd)(f)
		if !ok1 || !ok2 || w <= 0 {
			return 0, false
		}
		return 100 * c / w, true
	}
}

// profileRatio is a reading's value: metric of step a over metric of step b (the same metric when
// only one is given; else the first for a, the second for b).
func profileRatio(a, b string, metrics ...string) func(lab.Figures) (float64, bool) {
	ma, mb := metrics[0], metrics[0]
	if len(metrics) > 1 {
		mb = metrics[1]
	}
	return func(f lab.Figures) (float64, bool) {
		x, ok1 := lab.ProfileMetric(a, ma)(f)
		y, ok2 := lab.ProfileMetric(b, mb)(f)
		if !ok1 || !ok2 || y <= 0 {
			return 0, false
		}
		return x / y, true
	}
}

// at4096 is the record of a variant at 4096^3: in the step table ("matmul") or among the variants.
func at4096(f lab.Figures, variant string) (record.Record, bool) {
	if f.Run == nil {
		return record.Record{}, false
	}
	for _, c := range []string{"matmul", "variant"} {
		if r, ok := f.Run.Find(c, variant, 0); ok {
			return r, true
		}
	}
	return record.Record{}, false
}

// ratio is a reading's value: the median of base over that of variant, each at 4096^3 (at4096).
func ratio(base, variant string) func(lab.Figures) (float64, bool) {
	return func(f lab.Figures) (float64, bool) {
		b, ok1 := at4096(f, base)
		v, ok2 := at4096(f, variant)
		if !ok1 || !ok2 || b.MedianMS <= 0 || v.MedianMS <= 0 {
			return 0, false
		}
		return b.MedianMS / v.MedianMS, true
	}
}

// errorRatio is a reading's value: the rel L2 error of a over that of b, each at 4096^3 on the same
// sampled elements.
func errorRatio(a, b string) func(lab.Figures) (float64, bool) {
	return func(f lab.Figures) (float64, bool) {
		x, ok1 := at4096(f, a)
		y, ok2 := at4096(f, b)
		if !ok1 || !ok2 || x.RelL2 <= 0 || y.RelL2 <= 0 {
			return 0, false
		}
		return x.RelL2 / y.RelL2, true
	}
}

// relL2s is a reading's detail: the rel L2 errors of the variants at 4096^3.
func relL2s(variants ...string) func(lab.Figures) string {
	return func(f lab.Figures) string {
		s := ""
		for _, v := range variants {
			if r, ok := at4096(f, v); ok {
				if s != "" {
					s += ", "
				}
				s += fmt.Sprintf("%s %.3g", v, r.RelL2)
			}
		}
		if s == "" {
			return ""
		}
		return "rel L2: " + s
	}
}

// ladderGains are the ratios of each CUDA-core step (2 to 7) over the one before, with its name.
func ladderGains(f lab.Figures) (gains []float64, names []string, ok bool) {
	for i := 1; i < len(Steps) && Steps[i].Name != "8 tensor core tf32"; i++ {
		g, ok := lab.Ratio("matmul", Steps[i-1].Name, Steps[i].Name)(f)
		if !ok {
			return nil, nil, false
		}
		gains, names = append(gains, g), append(names, Steps[i].Name)
	}
	return gains, names, len(gains) > 0
}

// smallestGain is a reading's value: the smallest of ladderGains.
func smallestGain(f lab.Figures) (float64, bool) {
	gains, _, ok := ladderGains(f)
	if !ok {
		return 0, false
	}
	m := math.Inf(1)
	for _, g := range gains {
		m = math.Min(m, g)
	}
	return m, true
}

// smallestGainStep is a reading's detail: which step made the smallest gain.
func smallestGainStep(f lab.Figures) string {
	gains, names, ok := ladderGains(f)
	if !ok {
		return ""
	}
	best := 0
	for i, g := range gains {
		if g < gains[best] {
			best = i
		}
	}
	return "at " + names[best]
}

// offTiles is a reading's value: the geometric mean over the awkward shapes ("nonsquare") of cuBLAS
// fp32's median over that of the step Multiply took there.
func offTiles(f lab.Figures) (float64, bool) {
	if f.Run == nil {
		return 0, false
	}
	sum, n := 0.0, 0
	for _, r := range f.Run.Select("nonsquare") {
		if r.Kind == "baseline" || r.MedianMS <= 0 {
			continue
		}
		b, ok := f.Run.Find("nonsquare", TorchFP32, r.Size)
		if !ok || b.Shape != r.Shape || b.MedianMS <= 0 {
			continue
		}
		sum += math.Log(b.MedianMS / r.MedianMS)
		n++
	}
	if n == 0 {
		return 0, false
	}
	return math.Exp(sum / float64(n)), true
}

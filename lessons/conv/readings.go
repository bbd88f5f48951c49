package conv

import (
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// The readings cells of the notebook: each section's figures from the run on the page (the
// recorded run without a GPU), the lesson's claim about them, and whether it held
// (lab.Env.ShowReadings).

// ProfiledStep is the step whose Nsight Compute profile the notebook shows and its readings cite.
const ProfiledStep = "5 cp.async TF32"

// Profile metrics the readings cite (results/profiles/05_conv.json).
const (
	TensorPipe = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
	FMAPipe    = "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"
)

// CUDACoreReadings are the figures of steps 1 to 3 at AlexNet's first layer: each step against the
// one before, and the float32-exact implicit GEMM against cuDNN's float32 conv.
func CUDACoreReadings() []lab.Reading {
	return []lab.Reading{
		{What: "step 2 (shared tiles) against step 1 (direct)", Value: lab.Ratio(CaseAlexNet, "1 direct", "2 shared tiles"), Format: lab.Speedup,
			Claim: "reusing the patch and the filters from shared memory is faster", Holds: lab.Above(1)},
		{What: "step 3 (implicit GEMM) against step 2", Value: lab.Ratio(CaseAlexNet, "2 shared tiles", "3 implicit GEMM"), Format: lab.Speedup,
			Claim: "the register-tiled implicit GEMM is faster than the shared tiles", Holds: lab.Above(1)},
		{What: "step 3 against cuDNN float32 (TF32 off)", Value: lab.Ratio(CaseAlexNet, CuDNN, "3 implicit GEMM"), Format: lab.Speedup,
			Claim: "the float32-exact conv reaches at least 0.8x cuDNN float32's speed", Holds: lab.AtLeast(0.8)},
	}
}

// TensorCoreReadings are the figures of steps 4 and 5 and of step 5's profile: the tensor cores
// against the CUDA cores, the pipeline's depth, the fastest tensor-core step against cuDNN, and how
// busy the tensor pipe was at AlexNet's 3-channel layer.
func TensorCoreReadings() []lab.Reading {
	return []lab.Reading{
		{What: "step 4 TF32 against step 3 (CUDA cores)", Value: lab.Ratio(CaseAlexNet, "3 implicit GEMM", "4 tensor cores TF32"), Format: lab.Speedup,
			Claim: "the tensor cores are faster than the CUDA cores' implicit GEMM", Holds: lab.Above(1)},
		{What: "step 5 TF32 against step 4 TF32", Value: lab.Ratio(CaseAlexNet, "4 tensor cores TF32", ProfiledStep), Format: lab.Speedup,
			Claim: "the cp.async pipeline is faster than step 4's register staging", Holds: lab.Above(1)},
		{What: "step 5 TF32 with 3 buffers against 2", Value: lab.Ratio(CaseAlexNet, "5 cp.async TF32, 2 buffers", ProfiledStep), Format: lab.Speedup,
			Claim: "two tiles in flight hide more of the gather than one", Holds: lab.Above(1)},
		{What: "the fastest tensor-core step against cuDNN float32", Value: fastestTensorCore, Format: lab.Speedup,
			Claim: "a tensor-core conv at least 1.5x faster than cuDNN float32", Holds: lab.AtLeast(1.5), Detail: fastestTensorCoreName},
		{What: "step 5 TF32 against cuDNN TF32 (the same number format)", Value: lab.Ratio(CaseAlexNet, CuDNNTF32, ProfiledStep), Format: lab.Speedup},
		{What: "step 5 TF32's tensor pipe, % of its peak (the profile above)", Value: lab.ProfileMetric(ProfiledStep, TensorPipe), Format: lab.Percent,
			Claim: "at 3 input channels the gather, not the multiply, sets the pace: the tensor pipe is busy less than half the time", Holds: lab.Below(50),
			Why: "The tensor pipe is the limit here: the next lever is the multiply itself (larger tiles, FP16's wider k).", Detail: lab.ProfiledOn},
		{What: "step 5 TF32's FMA pipe, % of its peak (the gather's index arithmetic and the epilogue)", Value: lab.ProfileMetric(ProfiledStep, FMAPipe), Format: lab.Percent, Detail: lab.ProfiledOn},
	}
}

// fastestTensorCore is the speedup over cuDNN float32 of the fastest correct tensor-core step at
// AlexNet's layer.
func fastestTensorCore(f lab.Figures) (float64, bool) {
	if f.Run == nil {
		return 0, false
	}
	best, cu := bestOf(f.Run, CaseAlexNet, tcSteps), f.Run.Median(CaseAlexNet, CuDNN)
	if best.MedianMS <= 0 || cu <= 0 {
		return 0, false
	}
	return cu / best.MedianMS, true
}

func fastestTensorCoreName(f lab.Figures) string {
	if f.Run == nil {
		return ""
	}
	return bestOf(f.Run, CaseAlexNet, tcSteps).Variant
}

// bestOf is the fastest correct record of case c among steps.
func bestOf(run *record.Run, c string, steps []string) record.Record {
	var b record.Record
	for _, r := range run.Select(c) {
		for _, s := range steps {
			if r.Variant == s && r.Kind == "kernel" && r.Correct && r.MedianMS > 0 && (b.MedianMS == 0 || r.MedianMS < b.MedianMS) {
				b = r
			}
		}
	}
	return b
}

// FusedReadings are the figures of the fused conv + ReLU + pool: the faster fused step against the
// eager three kernels and torch.compile, and step 7 (no atomics) against step 6.
func FusedReadings() []lab.Reading {
	fused := func(base string) func(lab.Figures) (float64, bool) {
		return func(f lab.Figures) (float64, bool) {
			if f.Run == nil {
				return 0, false
			}
			b, fu := f.Run.Median(CaseFused, base), bestOf(f.Run, CaseFused, fusedSteps)
			if b <= 0 || fu.MedianMS <= 0 {
				return 0, false
			}
			return b / fu.MedianMS, true
		}
	}
	name := func(f lab.Figures) string {
		if f.Run == nil {
			return ""
		}
		return bestOf(f.Run, CaseFused, fusedSteps).Variant
	}
	return []lab.Reading{
		{What: "the faster fused step against eager PyTorch's three kernels (TF32 off)", Value: fused(Eager), Format: lab.Speedup, Detail: name,
			Claim: "one fused kernel at least 1.5x faster than the eager three", Holds: lab.AtLeast(1.5)},
		{What: "the faster fused step against torch.compile (TF32 off)", Value: fused(Compiled), Format: lab.Speedup, Detail: name,
			Claim: "the fused kernel is faster than torch.compile", Holds: lab.Above(1)},
		{What: "the faster fused step against torch.compile with TF32 on (the same number format)", Value: fused(CompiledTF32), Format: lab.Speedup, Detail: name},
		{What: "step 7 (pool in the epilogue) against step 6 (atomicMax)", Value: lab.Ratio(CaseFused, "6 fused atomicMax", "7 fused tile pool"), Format: lab.Speedup},
	}
}

// DeepReadings are the figures of the deep 3x3 layer: where cuDNN is strongest.
func DeepReadings() []lab.Reading {
	return []lab.Reading{
		{What: "step 5 TF32 against cuDNN float32 at the deep layer", Value: lab.Ratio(CaseDeep, CuDNN, ProfiledStep), Format: lab.Speedup},
		{What: "cuDNN TF32 against step 5 TF32 at the deep layer", Value: lab.Ratio(CaseDeep, ProfiledStep, CuDNNTF32), Format: lab.Speedup,
			Claim: "cuDNN is strongest here: its TF32 conv is faster than step 5 TF32", Holds: lab.Above(1)},
	}
}

// SweepReadings are the figures of the batch sweep: how much of the full batch's throughput one
// image gets.
func SweepReadings() []lab.Reading {
	ns := SweepNs(false)
	small, full := int64(ns[0]), int64(AlexNet.N)
	share := func(f lab.Figures) (float64, bool) {
		if f.Run == nil {
			return 0, false
		}
		a, oka := f.Run.Find(CaseSweep, ProfiledStep, small)
		b, okb := f.Run.Find(CaseSweep, ProfiledStep, full)
		if !oka || !okb || a.GFLOPs <= 0 || b.GFLOPs <= 0 {
			return 0, false
		}
		return 100 * a.GFLOPs / b.GFLOPs, true
	}
	return []lab.Reading{
		{What: "step 5 TF32's throughput with one image, as a share of its throughput with the article's batch", Value: share, Format: lab.Percent,
			Claim: "with one image most of the GPU idles: less than half the full batch's throughput", Holds: lab.Below(50)},
	}
}

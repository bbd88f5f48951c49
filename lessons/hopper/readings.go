package hopper

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons/matmul"
)

// The readings cells of the notebook: each section's figures from the run on the page (the
// recorded run without a GPU), the lesson's claim about them, and whether it held
// (lab.Env.ShowReadings).

// ProfiledStep is the step whose Nsight Compute profile the notebook shows and its readings cite.
const ProfiledStep = "2 TMA ring"

// Profile metrics the readings cite (nsight.Targets' 08_hopper target; results/profiles/08_hopper.json).
const (
	// TensorPipe is the tensor pipe's active cycles, every tensor instruction (wgmma included).
	TensorPipe = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"
	// TensorPipeHMMA is the pipe's mma counter, which on compute capability 9.0 also counts wgmma's
	// cycles: profiles recorded before TensorPipe was asked for have this one.
	TensorPipeHMMA = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
	WGMMAIssue     = "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active"
	TMABytes       = "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum"
	TMAActive      = "sm__pipe_tma_cycles_active.avg.pct_of_peak_sustained_active"
	BarrierStall   = "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio"
	CyclesPerIssue = "Warp Cycles Per Issued Instruction"
)

// ProfileMetrics are the profile metrics the readings cite.
var ProfileMetrics = []string{TensorPipe, TensorPipeHMMA, WGMMAIssue, TMABytes, TMAActive, BarrierStall, CyclesPerIssue}

// LadderReadings are the figures of steps 1 and 2 and of step 2's profile: wgmma alone against
// lesson 03's mma.sync, what TMA and a ring of stages add, how busy the tensor pipe is, what TMA
// loaded, and the barrier step 3 removes.
func LadderReadings() []lab.Reading {
	return []lab.Reading{
		{What: "step 1 (wgmma, plain copies) against lesson 03's mma.sync pipeline, fp16", Value: lab.Ratio(FP16, Lesson03, "1 wgmma"), Format: lab.Speedup,
			Claim: "the new instruction alone is about as fast as lesson 03's whole pipeline (within 25%)", Holds: lab.Between(0.8, 1.25)},
		{What: "step 2 (TMA ring) against step 1, fp16", Value: lab.Ratio(FP16, "1 wgmma", ProfiledStep), Format: lab.Speedup,
			Claim: "about twice step 1's speed (1.5x to 2.5x)", Holds: lab.Between(1.5, 2.5)},
		{What: "step 2's tensor pipe active, % of its peak (the profile above)", Value: tensorPipe, Format: lab.Percent, Detail: lab.ProfiledOn},
		{What: "step 2's wgmma instructions, % of the tensor pipe's peak issue rate", Value: lab.ProfileMetric(ProfiledStep, WGMMAIssue), Format: lab.Percent, Detail: lab.ProfiledOn},
		{What: "bytes TMA loaded for step 2, % of A's and B's size", Value: tmaShare, Format: lab.Percent, Detail: lab.ProfiledOn,
			Claim: "every operand byte arrives by TMA (at least A and B once; tiles are loaded again by other blocks)", Holds: lab.AtLeast(100)},
		{What: "step 2's TMA unit active, % of its peak", Value: lab.ProfileMetric(ProfiledStep, TMAActive), Format: lab.Percent, Detail: lab.ProfiledOn},
		{What: "share of a step 2 warp's cycles spent at the block barrier", Value: barrierShare, Format: lab.Percent, Detail: lab.ProfiledOn,
			Claim: "the __syncthreads before a stage is refilled costs at least a quarter of the warps' cycles (what step 3 removes)", Holds: lab.AtLeast(25)},
	}
}

// tensorPipe is the tensor pipe's activity: TensorPipe, or TensorPipeHMMA in a profile without it.
func tensorPipe(f lab.Figures) (float64, bool) {
	if v, ok := lab.ProfileMetric(ProfiledStep, TensorPipe)(f); ok {
		return v, true
	}
	return lab.ProfileMetric(ProfiledStep, TensorPipeHMMA)(f)
}

// tmaShare is the bytes TMA loaded over the bytes of A and B at 4096^3 in 16 bits, in %.
func tmaShare(f lab.Figures) (float64, bool) {
	b, ok := lab.ProfileMetric(ProfiledStep, TMABytes)(f)
	if !ok {
		return 0, false
	}
	s := Article
	return 100 * b / float64(2*(s.M*s.K+s.K*s.N)), true
}

func barrierShare(f lab.Figures) (float64, bool) {
	b, ok1 := lab.ProfileMetric(ProfiledStep, BarrierStall)(f)
	c, ok2 := lab.ProfileMetric(ProfiledStep, CyclesPerIssue)(f)
	if !ok1 || !ok2 || c <= 0 {
		return 0, false
	}
	return 100 * b / c, true
}

// cublasShare is a step's share of cuBLAS's speed in format dtype: cuBLAS's time over the step's, in %.
func cublasShare(dtype, step string) func(lab.Figures) (float64, bool) {
	return func(f lab.Figures) (float64, bool) {
		r, ok := lab.Ratio(dtype, VendorName(dtype), step)(f)
		return 100 * r, ok
	}
}

// SpecializedReadings are the figures of steps 3 and 4: warp specialization, then clusters,
// persistence and the TMA store, against cuBLAS, and the variant that released at cluster scope.
func SpecializedReadings() []lab.Reading {
	gap := func(f lab.Figures) (float64, bool) {
		s2, ok2 := cublasShare(FP16, ProfiledStep)(f)
		s3, ok3 := cublasShare(FP16, "3 warp specialized")(f)
		if !ok2 || !ok3 || s2 >= 100 {
			return 0, false
		}
		return 100 * (s3 - s2) / (100 - s2), true
	}
	return []lab.Reading{
		{What: "share of step 2's gap to cuBLAS fp16 that step 3 (warp specialization) closes", Value: gap, Format: lab.Percent,
			Claim: "warp specialization closes most of the gap", Holds: lab.Above(50)},
		{What: "step 4 (clusters, persistent), fp16, % of cuBLAS fp16's speed", Value: cublasShare(FP16, "4 clusters, persistent"), Format: lab.Percent,
			Claim: "step 4 reaches cuBLAS's speed (95% or more)", Holds: lab.AtLeast(95)},
		{What: "step 4, bf16, % of cuBLAS bf16's speed", Value: cublasShare(BF16, "4 clusters, persistent"), Format: lab.Percent,
			Claim: "the same in bf16", Holds: lab.AtLeast(95)},
		{What: "step 4 against its variant with the cluster-scope release, fp16", Value: lab.Ratio(FP16, "4, cluster-scope release", "4 clusters, persistent"), Format: lab.Speedup,
			Claim: "the release at cluster scope, once per k tile, made the step slower", Holds: lab.Above(1)},
		{What: "step 4 against its variant without multicast, fp16", Value: lab.Ratio(FP16, "4, no multicast", "4 clusters, persistent"), Format: lab.Speedup},
	}
}

// Float32Readings are the figures of the float32 products: the split and TF32 against cuBLAS fp32
// and TF32 and lesson 03's split, with the split's error against cuBLAS fp32's.
func Float32Readings() []lab.Reading {
	errRatio := func(f lab.Figures) (float64, bool) {
		if f.Run == nil {
			return 0, false
		}
		s, ok1 := f.Run.Find(Float32, Split.Name, 0)
		c, ok2 := f.Run.Find(Float32, matmul.TorchFP32, 0)
		if !ok1 || !ok2 || c.RelL2 <= 0 || s.RelL2 <= 0 {
			return 0, false
		}
		return s.RelL2 / c.RelL2, true
	}
	return []lab.Reading{
		{What: "step 5 (the split) against cuBLAS fp32", Value: lab.Ratio(Float32, matmul.TorchFP32, Split.Name), Format: lab.Speedup,
			Claim: "float32 accuracy faster than cuBLAS fp32", Holds: lab.Above(1)},
		{What: "step 5 against lesson 03's split (mma.sync)", Value: lab.Ratio(Float32, "lesson 03: "+Lesson03Split+" (mma.sync)", Split.Name), Format: lab.Speedup,
			Claim: "faster than lesson 03's split", Holds: lab.Above(1)},
		{What: "step 5's relative error over cuBLAS fp32's, on the same inputs", Value: errRatio, Format: times,
			Claim: "no larger than cuBLAS fp32's", Holds: func(v float64) bool { return v <= 1 }},
		{What: "step 6 (TF32), % of cuBLAS TF32's speed", Value: func(f lab.Figures) (float64, bool) {
			r, ok := lab.Ratio(Float32, matmul.TorchTF32, TF32.Name)(f)
			return 100 * r, ok
		}, Format: lab.Percent, Claim: "close to cuBLAS TF32 (85% or more), transpose included", Holds: lab.AtLeast(85)},
	}
}

// times formats a ratio of errors as "0.86x".
func times(v float64) string { return fmt.Sprintf("%.2fx", v) }

// ConvReadings are the figures of the deep convolution: step 7 against cuDNN TF32's faster form and
// lesson 05's best, and its product alone against cuDNN fp16 on channels-last tensors.
func ConvReadings() []lab.Reading {
	overCuDNN := func(f lab.Figures) (float64, bool) {
		if f.Run == nil {
			return 0, false
		}
		t, _ := fastestCuDNNTF32(f.Run)
		s := f.Run.Median(ConvCase, ConvFP16.Name)
		if t <= 0 || s <= 0 {
			return 0, false
		}
		return t / s, true
	}
	return []lab.Reading{
		{What: "step 7 (FP16, layout passes included) against cuDNN TF32's faster form", Value: overCuDNN, Format: lab.Speedup,
			Claim: "step 7 beats cuDNN TF32", Holds: lab.Above(1)},
		{What: "step 7 against lesson 05's step 5 TF32", Value: lab.Ratio(ConvCase, Lesson05Prefix+"5 cp.async TF32", ConvFP16.Name), Format: lab.Speedup,
			Claim: "lesson 05's steps are far behind (step 7 at least 2x faster)", Holds: lab.AtLeast(2)},
		{What: "step 7's product alone against cuDNN fp16 on channels-last tensors", Value: lab.Ratio(ConvCase, "cuDNN fp16, channels-last, benchmark", ConvFP16.Name+ProductAlone), Format: lab.Speedup},
		{What: "step 8 (TF32) against cuDNN TF32's faster form", Value: func(f lab.Figures) (float64, bool) {
			if f.Run == nil {
				return 0, false
			}
			t, _ := fastestCuDNNTF32(f.Run)
			s := f.Run.Median(ConvCase, ConvTF32.Name)
			return t / s, t > 0 && s > 0
		}, Format: lab.Speedup},
	}
}

package hopper

import "github.com/cudalessons/cudalessons/helpers/lab"

// Headlines are the readings that carry the lesson's main claims, from its sections' readings: the
// README's table of recorded results states them from each recorded machine.
func Headlines() []lab.Reading {
	rs := append(append(append(LadderReadings(), SpecializedReadings()...), Float32Readings()...), ConvReadings()...)
	return lab.Select(rs,
		"step 1 (wgmma, plain copies) against lesson 03's mma.sync pipeline, fp16",
		"step 2 (TMA ring) against step 1, fp16",
		"step 4 (clusters, persistent), fp16, % of cuBLAS fp16's speed",
		"step 4, bf16, % of cuBLAS bf16's speed",
		"step 4 against its variant with the cluster-scope release, fp16",
		"step 5 (the split) against cuBLAS fp32",
		"step 5's relative error over cuBLAS fp32's, on the same inputs",
		"step 6 (TF32), % of cuBLAS TF32's speed",
		"step 7 (FP16, layout passes included) against cuDNN TF32's faster form",
		"step 8 (TF32) against cuDNN TF32's faster form")
}

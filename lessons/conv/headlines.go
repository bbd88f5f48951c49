package conv

import "github.com/cudalessons/cudalessons/helpers/lab"

// Headlines are the readings that carry the lesson's main claims, from its sections' readings: the
// README's table of recorded results states them from each recorded machine.
func Headlines() []lab.Reading {
	rs := append(append(append(CUDACoreReadings(), TensorCoreReadings()...), FusedReadings()...), DeepReadings()...)
	return lab.Select(rs,
		"step 3 against cuDNN float32 (TF32 off)",
		"the fastest tensor-core step against cuDNN float32",
		"step 5 TF32 against cuDNN TF32 (the same number format)",
		"the faster fused step against eager PyTorch's three kernels (TF32 off)",
		"the faster fused step against torch.compile (TF32 off)",
		"step 5 TF32 against cuDNN float32 at the deep layer")
}

package matmul

import "github.com/cudalessons/cudalessons/helpers/lab"

// Headlines are the readings that carry the lesson's main claims, from its sections' readings: the
// README's table of recorded results states them from each recorded machine.
func Headlines() []lab.Reading {
	rs := append(append(append(LadderReadings(), SplitReadings()...), BankReadings()...), TensorReadings()...)
	return lab.Select(rs,
		"step 7 against cuBLAS fp32",
		"step 7, share of the FP32 peak",
		"step 8 against cuBLAS TF32",
		"Multiply off the tiles against cuBLAS fp32 (geometric mean over the awkward shapes)",
		"fp16x3 (step 9) against cuBLAS fp32",
		"fp16x3's rel L2 error over cuBLAS fp32's",
		"step 7's FMA pipe use over step 6's")
}

package giou

import "github.com/cudalessons/cudalessons/helpers/lab"

// Headlines are the readings that carry the lesson's main claims, from its sections' readings: the
// README's table of recorded results states them from each recorded machine.
func Headlines() []lab.Reading {
	rs := append(append(LaunchReadings(), BlockMeanReadings()...), TrainReadings()...)
	return lab.Select(rs,
		"step 1 (the article's kernel and its second pass) against eager padded + mask",
		"step 3 against torch.compile's padded loss",
		"step 6 (a warp per image) against step 3, the loss alone",
		"step 6's fused loss and gradient against eager autograd",
		"step 6's fused loss and gradient against torch.compile's")
}

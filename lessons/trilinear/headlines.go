package trilinear

import "github.com/cudalessons/cudalessons/helpers/lab"

// Headlines are the readings that carry the lesson's main claims, from its sections' readings: the
// README's table of recorded results states them from each recorded machine.
func Headlines() []lab.Reading {
	rs := append(append(ForwardReadings(), Float4Readings()...), BackwardReadings()...)
	return lab.Select(rs,
		"step 2's share of the copy bandwidth",
		"step 3 against torch.compile",
		"step 5 (dfeats) against eager's backward",
		"step 7 against PyTorch's eager training step")
}

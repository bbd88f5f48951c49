package rwkv

import "github.com/cudalessons/cudalessons/helpers/lab"

// Headlines are the readings that carry the lesson's main claims, from its sections' readings: the
// README's table of recorded results states them from each recorded machine.
func Headlines() []lab.Reading {
	rs := append(append(LadderReadings(), BackwardReadings()...), ProfileReadings()...)
	return lab.Select(rs,
		"torch.compile against eager PyTorch, forward",
		"v3 batch group (the article's last step) against PyTorch",
		"v4 balanced against v3",
		"v4 balanced, share of the FP32 peak",
		"v8 against v4, the best exact-FP32 step",
		"v8 against PyTorch",
		"v6's error over v7's (rel L2 against float64)",
		"bwd v4 register tile against PyTorch's backward",
		"v4's L1/TEX throughput over its FMA pipe's")
}

package reduce

import "github.com/cudalessons/cudalessons/helpers/lab"

// Headlines are the readings that carry the lesson's main claims, from its sections' readings: the
// README's table of recorded results states them from each recorded machine.
func Headlines() []lab.Reading {
	rs := append(append(SoftmaxReadings(), ClusterProfileReadings()...), LayerNormReadings()...)
	return lab.Select(rs,
		"Step 8 at (4096, 65536), share of the copy bandwidth for the minimum traffic",
		"Step 8 against torch.compile, same run",
		"Step 8 against PyTorch eager, same run",
		"Step 5, DRAM bytes read per byte of x (ncu "+metricDRAMRead+")",
		"Step 4 at (16, 64, 256, 256) against torch.compile, same run",
		"Step 4 against eager F.layer_norm, same run",
		"Mean 1000, std 0.1: step 2 (the article's formula)",
		"Mean 1000, std 0.1: step 3 (Welford)")
}

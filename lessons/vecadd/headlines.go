package vecadd

import "github.com/cudalessons/cudalessons/helpers/lab"

// Headlines are the readings that carry the lesson's main claims, from its sections' readings: the
// README's table of recorded results states them from each recorded machine.
func Headlines() []lab.Reading {
	rs := append(append(CopyReadings(), MethodReadings()...), ProfileReadings()...)
	return lab.Select(rs,
		"float4, share of the copy bandwidth",
		"float4 against naive",
		"host clock without a sync, implied share of the copy bandwidth",
		"float4's DRAM throughput over naive's")
}

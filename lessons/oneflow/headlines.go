package oneflow

import "github.com/cudalessons/cudalessons/helpers/lab"

// Headlines are the readings that carry the lesson's main claims, from its sections' readings: the
// README's table of recorded results states them from each recorded machine.
func Headlines() []lab.Reading {
	rs := append(append(append(ElementwiseReadings(), ProfileReadings()...), AtomicReadings()...), UpsampleReadings()...)
	return lab.Select(rs,
		"float, packed: share of the copy bandwidth",
		"half, packed: share of the copy bandwidth",
		"float: packed against torch.mul",
		"half: packed against torch.mul",
		"fast specialised (half2, zero lane) against atomicAdd(half)",
		string(F32)+" forward: pack2x against generic",
		string(F32)+" backward: pack2x against generic")
}

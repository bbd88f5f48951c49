package check

import (
	"math/rand/v2"
	"slices"
)

// Pick chooses which n of total rows, columns or samples a check compares when comparing all of
// them costs too much: n distinct indices of [0, total), sorted, the first and the last among them
// when n >= 2 (the edges, where tails hide), the rest drawn from r; every index when n >= total.
func Pick(r *rand.Rand, total, n int) []int {
	if n >= total {
		out := make([]int, total)
		for i := range out {
			out[i] = i
		}
		return out
	}
	pick := map[int]bool{}
	if n >= 1 {
		pick[0] = true
	}
	if n >= 2 {
		pick[total-1] = true
	}
	for len(pick) < n {
		pick[r.IntN(total)] = true
	}
	out := make([]int, 0, n)
	for i := range pick {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

package parallel

import (
	"sync/atomic"
	"testing"
)

// Every index runs exactly once, for counts below, at and above the number of cores.
func TestForRunsEveryIndexOnce(t *testing.T) {
	for _, n := range []int{0, 1, 3, 1000} {
		seen := make([]int32, n)
		For(n, func(i int) { atomic.AddInt32(&seen[i], 1) })
		for i, c := range seen {
			if c != 1 {
				t.Errorf("n = %d: index %d ran %d times", n, i, c)
			}
		}
	}
}

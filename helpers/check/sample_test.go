package check

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Pick gives n distinct sorted indices with both edges, every index when n covers them all, and
// the same indices from the same seed.
func TestPick(t *testing.T) {
	for _, c := range []struct{ total, n int }{{10, 0}, {10, 1}, {10, 2}, {10, 5}, {10, 10}, {10, 20}, {4096, 24}} {
		got := Pick(rand.New(rand.NewPCG(1, 2)), c.total, c.n)
		if want := min(c.n, c.total); len(got) != want {
			t.Fatalf("%v: %d indices, want %d", c, len(got), want)
		}
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Errorf("%v: %v not sorted and distinct", c, got)
		}
		if c.n >= 2 && (got[0] != 0 || got[len(got)-1] != c.total-1) {
			t.Errorf("%v: %v misses an edge", c, got)
		}
		if again := Pick(rand.New(rand.NewPCG(1, 2)), c.total, c.n); !slices.Equal(got, again) {
			t.Errorf("%v: %v then %v from the same seed", c, got, again)
		}
	}
}

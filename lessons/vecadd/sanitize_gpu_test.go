//go:build !nocuda

package vecadd

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	kv "github.com/cudalessons/cudalessons/kernels/vecadd"
)

// TestSanitize launches every kernel of kernels/vecadd for the compute-sanitizer pass (cmd/sanitize
// runs it under memcheck, racecheck and synccheck): the three steps on 3, 257 and 1027 elements,
// from aligned buffers and from views offset by one element, where the float4 step falls back to the
// grid-stride kernel, each against the float64 reference on a NaN-poisoned output. The sizes reach
// every edge at five blocks a launch at most: 3 is all float4 tail (no whole pack), 257 leaves one
// thread in a second block, and 1027 ends mid-block and is 256 packs and a tail of 3 (the lesson's
// 64M elements would be 256K blocks under racecheck).
func TestSanitize(t *testing.T) {
	env := labtest.Open(t)
	for _, n := range []int{3, 257, 1027} {
		for _, offset := range []int{0, 1} {
			checkSteps(t, env, n, offset)
		}
	}
	labtest.LaunchedEvery(t, kv.Kernels, env)
}

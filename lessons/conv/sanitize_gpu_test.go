//go:build !nocuda

package conv

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	kc "github.com/cudalessons/cudalessons/kernels/conv"
)

// sanitizeShapes are TestSanitize's layers, each a few dozen blocks at most per launch:
//   - 2 images of 11 x 13, 17 channels, 3 x 3 "same": 286 pixels (3 GEMM row tiles, the last 30
//     rows), 100 filters (a second channel tile of 4), 153 taps (5 tensor-core tiles of 32, the last
//     25 taps, so the 3-buffer ring wraps), pool windows across row tiles (step 6's atomics from
//     several blocks), and step 7's 3 x 6 pool tiles over a 5 x 6 pool (a partial second tile);
//   - an AlexNet-like 11 x 11 stride 4 padding 2 layer on 2 images of 37 x 41 (363 taps);
//   - the deep 3 x 3 layer's 256 channels (2304 taps: the long product and the largest tap table,
//     110 KiB of shared memory with three buffers) on one 5 x 7 image, 130 filters.
var sanitizeShapes = []Shape{
	{N: 2, C: 17, H: 11, W: 13, K: 100, R: 3, S: 1, P: 1},
	{N: 2, C: 3, H: 37, W: 41, K: 96, R: 11, S: 4, P: 2},
	{N: 1, C: 256, H: 5, W: 7, K: 130, R: 3, S: 1, P: 1},
}

// TestSanitize launches every kernel of kernels/conv for the compute-sanitizer pass (cmd/sanitize
// runs it under memcheck, racecheck and synccheck): every step and variant (defines, TF32 and FP16,
// 2 and 3 cp.async buffers, the fused steps) on each of sanitizeShapes, step 6 without its ReLU (its
// check must fail), steps 3 and 5 with the level-2 epilogue (EPILOGUE2), and both exercises' solutions through the exercises' own checks, untimed. The layers are small and
// awkward (partial pixel, channel, tap and pool tiles, padding at every border) so that a launch
// under racecheck stays short while it still reaches the kernels' edges; every output is compared
// with the float64 reference on a NaN-poisoned output, and a plan that refuses a layer is an error.
func TestSanitize(t *testing.T) {
	env := labtest.Open(t)
	for i, s := range sanitizeShapes {
		for _, err := range checkSteps(t, env, s, uint64(201+i)) {
			t.Error(err)
		}
	}
	checkNoReLUFails(t, env, sanitizeShapes[0], 201)
	checkEpilogue(t, env, sanitizeShapes[0], 210) // steps 3 and 5 in their EPILOGUE2 builds

	timed := exTimed
	exTimed = false // the checks would also time the solutions at the article's size
	defer func() { exTimed = timed }()
	checkSolution(t, env, Exercises[0])

	checkSolution(t, env, Exercises[1])

	labtest.LaunchedEvery(t, kc.Kernels, env)
}

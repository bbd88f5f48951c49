package matmul

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile/compiletest"
)

// Every kernel file compiles with NVRTC for Ampere and Hopper (no GPU needed) without a warning,
// in every build the lesson measures (the variants, step 7's tuning builds, 7b's tiles), starts with
// its header comment and declares the kernels the lesson looks up.
func TestEveryFileCompiles(t *testing.T) {
	compiletest.Check(t, compiletest.Folder{Dir: Kernels, Kernels: map[string][]string{
		"1_naive.cu":                    {"mm_naive"},
		"2_coalesced.cu":                {"mm_coalesced"},
		"3_shared.cu":                   {"mm_shared"},
		"4_blocktile_1d.cu":             {"mm_blocktile_1d"},
		"5_blocktile_2d.cu":             {"mm_blocktile_2d"},
		"6_vectorized.cu":               {"mm_vectorized"},
		"7_warptile.cu":                 {"mm_warptile"},
		"7b_any_shape.cu":               {"mm_warptile_any", "mm_sum_slices", "mm_copy_rows"},
		"7c_thin_k.cu":                  {"mm_thin_k"},
		"8_tf32_mma.cu":                 {"mm_tf32"},
		"9_split.cu":                    {"mm_split_halves", "mm_split"},
		"wrong_zeros.cu":                {"mm_zeros"},
		"solutions/ex1_blocktile_2d.cu": {"ex1_blocktile_2d"},
		"solutions/ex2_split.cu":        {"ex2_split"},
	}, Builds: map[string][][]string{
		"6_vectorized.cu": {{"PAD=0"}},
		"8_tf32_mma.cu":   {{"SPLIT3"}, {"SPLIT3", "ACC2"}, {"ACC2"}},
		"7_warptile.cu":   warptileBuilds(),
		"7b_any_shape.cu": {{"BM=128", "BN=128"}, {"BM=128", "BN=64"}, {"BM=64", "BN=128"}, {"BM=64", "BN=64"}, {"BM=64", "BN=32"}},
		"9_split.cu":      {{"USE_BF16"}, {"HI_ONLY"}, {"ACC2"}, {"USE_BF16", "ACC2"}},
	}, Warnings: map[string]string{
		"9_split.cu [HI_ONLY]": "the hi-only build declares the lo tiles' pointers and fragments and leaves them unused; the fix changes the file, which waits for a sanitizer pass on a GPU",
	}})
}

// warptileBuilds are step 7's tuning builds, spelled out as lessons/matmul's WarpTileBuilds has the
// tuning test time them: the A tile padded instead of swizzled, 64 x 64 warp tiles in 128 x 256
// blocks and two 128 x 128 blocks per SM, registers capped for two blocks per SM, and every other
// pipeline depth with k tiles 16 and 32 deep.
func warptileBuilds() [][]string {
	out := [][]string{{"PADDED"}, {"BN=256", "WN=64"}, {"WN=64", "MIN_BLOCKS=2"}, {"MIN_BLOCKS=2"}}
	for _, stages := range []string{"STAGES=2", "STAGES=3", "STAGES=4"} {
		for _, bk := range []string{"BK=16", "BK=32"} {
			out = append(out, []string{stages, bk})
		}
	}
	return out
}

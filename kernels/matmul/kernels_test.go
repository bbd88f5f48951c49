package matmul

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

// TestEveryKernelCompiles compiles every embedded kernel, and every build variant the lesson
// measures, with NVRTC for Ampere and Hopper: no GPU is needed, so CUDA errors show here.
func TestEveryKernelCompiles(t *testing.T) {
	fs := Files()
	if len(fs) < 9 {
		t.Fatalf("only %d kernel files embedded: %v", len(fs), fs)
	}
	variants := map[string][][]string{
		"6_vectorized.cu": {{"PAD=0"}},
		"8_tf32_mma.cu":   {{"SPLIT3"}, {"SPLIT3", "ACC2"}, {"ACC2"}},
		"7_warptile.cu":   warptileBuilds(),
		"7b_any_shape.cu": {{"BM=128", "BN=128"}, {"BM=128", "BN=64"}, {"BM=64", "BN=128"}, {"BM=64", "BN=64"}, {"BM=64", "BN=32"}},
		"9_split.cu":      {{"USE_BF16"}, {"HI_ONLY"}, {"ACC2"}, {"USE_BF16", "ACC2"}},
	}
	for _, f := range fs {
		src, err := Source(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(src.Code, `extern "C"`) {
			t.Errorf("%s: kernels must be extern \"C\" (unmangled names)", f)
		}
		for _, defs := range append([][]string{nil}, variants[f]...) {
			for _, arch := range []string{"compute_80", "compute_90"} {
				res, err := compile.PTX(src, compile.Options{Arch: arch, Defines: defs})
				if err != nil {
					t.Errorf("%s %v for %s: %v", f, defs, arch, err)
					continue
				}
				if !strings.Contains(res.PTX, ".entry ") {
					t.Errorf("%s %v: no kernel entry in the PTX", f, defs)
				}
				if res.Log != "" {
					t.Logf("%s %v: %s", f, defs, res.Log)
				}
			}
		}
	}
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

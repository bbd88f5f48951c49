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
		"7_warptile.cu":   {{"MIN_BLOCKS=2"}},
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

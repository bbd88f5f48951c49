package rwkv

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

// TestEveryKernelCompiles compiles every embedded kernel with NVRTC for Ampere and Hopper: no GPU
// is needed, so CUDA errors show here.
func TestEveryKernelCompiles(t *testing.T) {
	fs := Files()
	if len(fs) < 7 {
		t.Fatalf("only %d kernel files embedded: %v", len(fs), fs)
	}
	// v5 compiles for every tile size the lesson measures.
	for _, tt := range []string{"8", "16", "32"} {
		src, err := Source("5_register_tile.cu")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := compile.PTX(src, compile.Options{Arch: "compute_90", Defines: []string{"TT=" + tt}}); err != nil {
			t.Errorf("5_register_tile.cu with TT=%s: %v", tt, err)
		}
	}
	for _, f := range fs {
		src, err := Source(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(src.Code, `extern "C"`) {
			t.Errorf("%s: kernels must be extern \"C\" (unmangled names)", f)
		}
		for _, arch := range []string{"compute_80", "compute_90"} {
			res, err := compile.PTX(src, compile.Options{Arch: arch})
			if err != nil {
				t.Errorf("%s for %s: %v", f, arch, err)
				continue
			}
			if res.Log != "" {
				t.Logf("%s for %s: %s", f, arch, res.Log)
			}
		}
	}
}

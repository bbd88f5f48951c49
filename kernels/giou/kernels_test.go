package giou

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

// Every kernel file compiles with NVRTC for Ampere and Hopper (no GPU needed), starts with its
// header comment and declares the kernels the lesson looks up.
func TestEveryFileCompiles(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	want := map[string][]string{
		"1_article.cu":                    {"giou_article", "giou_article_reduce"},
		"2_skip.cu":                       {"giou_article_skip"},
		"3_block_mean.cu":                 {"giou_mean_f32", "giou_mean_f32_any"},
		"4_half.cu":                       {"giou_mean_f16", "giou_mean_f16_any", "giou_mean_bf16", "giou_mean_bf16_any"},
		"5_fused.cu":                      {"giou_train_f32", "giou_train_f32_any", "giou_scale_grad"},
		"6_warp.cu":                       {"giou_warp_f32", "giou_warp_f32_any", "giou_warp_train_f32", "giou_warp_train_f32_any"},
		"solutions/ex1_intersection.cu":   {"ex1_giou"},
		"solutions/ex2_enclosing_grad.cu": {"ex2_grad"},
	}
	files := Files()
	if len(files) != len(want) {
		t.Errorf("files %v, want the %d files of the test", files, len(want))
	}
	for _, f := range files {
		src, err := Source(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(src.Code, "//") {
			t.Errorf("%s: the file should start with a comment saying what changed and why", f)
		}
		for _, arch := range []string{"compute_80", "compute_90"} {
			res, err := compile.PTX(src, compile.Options{Arch: arch})
			if err != nil {
				t.Fatalf("%s for %s: %v", f, arch, err)
			}
			if strings.Trim(res.Log, " \t\r\n\x00") != "" {
				t.Errorf("%s for %s: NVRTC warnings:\n%s", f, arch, res.Log)
			}
			for _, k := range want[f] {
				if !strings.Contains(res.PTX, ".entry "+k+"(") {
					t.Errorf("%s (%s): no kernel %s in the PTX", f, arch, k)
				}
			}
		}
	}
}

package giou

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile/compiletest"
)

// Every kernel file compiles with NVRTC for Ampere and Hopper (no GPU needed) without a warning,
// starts with its header comment and declares the kernels the lesson looks up.
func TestEveryFileCompiles(t *testing.T) {
	compiletest.Check(t, compiletest.Folder{Dir: Kernels, Builds: nil, Kernels: map[string][]string{
		"1_article.cu":                    {"giou_article", "giou_article_reduce"},
		"2_skip.cu":                       {"giou_article_skip"},
		"3_block_mean.cu":                 {"giou_mean_f32", "giou_mean_f32_any"},
		"4_half.cu":                       {"giou_mean_f16", "giou_mean_f16_any", "giou_mean_bf16", "giou_mean_bf16_any"},
		"5_fused.cu":                      {"giou_train_f32", "giou_train_f32_any", "giou_scale_grad"},
		"6_warp.cu":                       {"giou_warp_f32", "giou_warp_f32_any", "giou_warp_train_f32", "giou_warp_train_f32_any"},
		"solutions/ex1_intersection.cu":   {"ex1_giou"},
		"solutions/ex2_enclosing_grad.cu": {"ex2_grad"},
	}})
}

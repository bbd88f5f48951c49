package trilinear

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile/compiletest"
)

// Every kernel file compiles with NVRTC for Ampere and Hopper (no GPU needed) without a warning,
// starts with its header comment and declares the kernels the lesson looks up.
func TestEveryFileCompiles(t *testing.T) {
	compiletest.Check(t, compiletest.Folder{Dir: Kernels, Builds: nil, Kernels: map[string][]string{
		"1_article.cu":               {"tri_fw_article"},
		"2_coalesced.cu":             {"tri_fw_coalesced"},
		"3_float4.cu":                {"tri_fw_float4"},
		"4_half.cu":                  {"tri_fw_f16", "tri_fw_bf16", "tri_fw_f16_any", "tri_fw_bf16_any"},
		"5_backward_feats.cu":        {"tri_bw_feats_float4", "tri_bw_feats_any"},
		"6_backward_points.cu":       {"tri_bw_points", "tri_bw_points_float4"},
		"7_fused.cu":                 {"tri_train_fused", "tri_train_fused_float4"},
		"solutions/ex1_coalesced.cu": {"ex1_coalesced"},
		"solutions/ex2_dpoints.cu":   {"ex2_dpoints"},
	}})
}

package rwkv

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile/compiletest"
)

// Every kernel file compiles with NVRTC for Ampere and Hopper (no GPU needed) without a warning,
// starts with its header comment and declares the kernels the lesson looks up; v5 also for every
// tile size the lesson measures.
func TestEveryFileCompiles(t *testing.T) {
	compiletest.Check(t, compiletest.Folder{Dir: Kernels, Kernels: map[string][]string{
		"0_naive.cu":              {"rwkv_fwd_v0"},
		"1_shared.cu":             {"rwkv_fwd_v1"},
		"2_float4.cu":             {"rwkv_fwd_v2"},
		"3_batch_group.cu":        {"rwkv_fwd_v3"},
		"4_balanced.cu":           {"rwkv_fwd_v4"},
		"5_register_tile.cu":      {"rwkv_fwd_v5"},
		"6_tensorcore_tf32.cu":    {"rwkv_fwd_v6"},
		"7_tensorcore_3xtf32.cu":  {"rwkv_fwd_v7"},
		"8_tensorcore_mma.cu":     {"rwkv_fwd_v8"},
		"9_general.cu":            {"rwkv_fwd_general", "rwkv_bwd_general", "rwkv_bwd_reduce"},
		"bwd_0_naive.cu":          {"rwkv_bwd_v0", "rwkv_bwd_reduce"},
		"bwd_1_shared.cu":         {"rwkv_bwd_v1", "rwkv_bwd_reduce"},
		"bwd_2_float4.cu":         {"rwkv_bwd_v2", "rwkv_bwd_reduce"},
		"bwd_3_batch_group.cu":    {"rwkv_bwd_v3", "rwkv_bwd_reduce"},
		"bwd_4_register_tile.cu":  {"rwkv_bwd_v4_dk", "rwkv_bwd_v4_dw", "rwkv_bwd_reduce"},
		"solutions/ex1_shared.cu": {"ex1_shared"},
		"solutions/ex2_pairs.cu":  {"ex2_pairs"},
	}, Builds: map[string][][]string{"5_register_tile.cu": {{"TT=8"}, {"TT=16"}, {"TT=32"}}}})
}

package reduce

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/compile/compiletest"
)

// Every kernel file compiles with NVRTC for Hopper (no GPU needed) without a warning, starts with its
// header comment and declares the kernels the lesson looks up; the cluster steps also compile for
// their cluster sizes, and ask for them.
func TestEveryFileCompiles(t *testing.T) {
	compiletest.Check(t, compiletest.Folder{Dir: Kernels, Archs: []string{"compute_90"}, Kernels: map[string][]string{
		"s1_naive.cu":                  {"softmax_naive"},
		"s2_block_tree.cu":             {"softmax_block_tree"},
		"s3_warp_float4.cu":            {"softmax_warp_float4"},
		"s4_online.cu":                 {"softmax_online"},
		"s5_cluster.cu":                {"softmax_cluster"},
		"s6_warp_row.cu":               {"softmax_warp_row4", "softmax_warp_row1"},
		"s7_half.cu":                   {"softmax_f16", "softmax_bf16"},
		"s8_cluster_any.cu":            {"softmax_cluster_any"},
		"s8b_cluster_stream.cu":        {"softmax_cluster_stream"},
		"s9_split_row.cu":              {"softmax_split_stats", "softmax_split_write"},
		"s10_backward.cu":              {"softmax_bwd_dot", "softmax_bwd_dx"},
		"s11_grid_ring.cu":             {"softmax_grid_ring"},
		"l1_block_per_sample.cu":       {"layernorm_block"},
		"l2_partial_sums.cu":           {"ln_sumsq_partials", "ln_sumsq_normalize"},
		"l3_welford.cu":                {"ln_welford_partials", "ln_welford_finalize", "ln_normalize"},
		"l4_fused.cu":                  {"ln_normalize_fused"},
		"l5_row_on_chip.cu":            {"ln_warp_rows", "ln_block_row"},
		"l6_grid_resident.cu":          {"ln_grid_resident"},
		"l7_backward.cu":               {"ln_bwd_partials", "ln_bwd_finalize", "ln_bwd_dx"},
		"util.cu":                      {"count_nonfinite_f32", "count_nonfinite_16"},
		"solutions/ex1_warp_reduce.cu": {"softmax_ex1"},
		"solutions/ex2_online.cu":      {"softmax_ex2"},
	}})
	for _, c := range []string{"CLUSTER=1", "CLUSTER=4", "CLUSTER=8"} {
		src, _ := Source("s5_cluster.cu")
		res, err := compile.PTX(src, compile.Options{Arch: "compute_90", Defines: []string{c, "VECS=4"}})
		if err != nil {
			t.Fatalf("s5_cluster.cu with %s: %v", c, err)
		}
		if !strings.Contains(res.PTX, ".reqnctapercluster "+strings.TrimPrefix(c, "CLUSTER=")) {
			t.Errorf("s5_cluster.cu with %s: the PTX does not ask for that cluster size", c)
		}
	}
	// Step 8 at the cluster sizes its plan picks, with and without shared memory (16 blocks is the
	// non-portable size the host must allow before the launch).
	for _, defs := range [][]string{{"CLUSTER=1", "SVECS=0"}, {"CLUSTER=6", "SVECS=8"}, {"CLUSTER=16", "SVECS=8"}} {
		src, _ := Source("s8_cluster_any.cu")
		res, err := compile.PTX(src, compile.Options{Arch: "compute_90", Defines: append(defs, "VECS=8")})
		if err != nil {
			t.Fatalf("s8_cluster_any.cu with %v: %v", defs, err)
		}
		if !strings.Contains(res.PTX, ".reqnctapercluster "+strings.TrimPrefix(defs[0], "CLUSTER=")) {
			t.Errorf("s8_cluster_any.cu with %v: the PTX does not ask for that cluster size", defs)
		}
	}
	// Steps 9 and 11 as log_softmax (LOG_SOFTMAX): their write is another expression, not the softmax's.
	for _, f := range []string{"s9_split_row.cu", "s11_grid_ring.cu"} {
		src, _ := Source(f)
		plain, err := compile.PTX(src, compile.Options{Arch: "compute_90"})
		if err != nil {
			t.Fatal(err)
		}
		logs, err := compile.PTX(src, compile.Options{Arch: "compute_90", Defines: []string{"LOG_SOFTMAX"}})
		if err != nil {
			t.Fatalf("%s with LOG_SOFTMAX: %v", f, err)
		}
		if strings.Contains(strings.ToLower(logs.Log), "warning") {
			t.Errorf("%s with LOG_SOFTMAX: %s", f, logs.Log)
		}
		if logs.PTX == plain.PTX {
			t.Errorf("%s: LOG_SOFTMAX changes nothing in the PTX", f)
		}
	}
	for _, f := range Files() {
		if strings.HasPrefix(f, "solutions/") {
			t.Errorf("Files lists the solution %s", f)
		}
	}
}

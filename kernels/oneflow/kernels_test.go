package oneflow

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile/compiletest"
)

// Every kernel file compiles with NVRTC for Ampere and Hopper (no GPU needed) without a warning,
// starts with its header comment and declares the kernels the lesson looks up; step 3 also for
// every packs-per-thread and cache hint the lesson's sweep measures.
func TestEveryFileCompiles(t *testing.T) {
	compiletest.Check(t, compiletest.Folder{Dir: Kernels, Builds: map[string][][]string{"3_inflight.cu": inflightBuilds()}, Kernels: map[string][]string{
		"1_naive.cu":                      {"mul_naive_f32", "mul_naive_f16"},
		"2_packed.cu":                     {"mul_packed_f32", "mul_packed_f16", "mul_pack1_f32", "mul_pack1_f16"},
		"3_inflight.cu":                   {"mul_inflight_f32", "mul_inflight_f16", "mul_inflight_pack1_f32", "mul_inflight_pack1_f16"},
		"a_1_half_atomic.cu":              {"dot_half_atomic"},
		"a_2_half2_atomic.cu":             {"dot_half2_atomic"},
		"a_3_fast_specialized.cu":         {"dot_fast_atomic"},
		"a_4_block_reduce.cu":             {"dot_block_reduce"},
		"u_1_generic.cu":                  {"up_generic_fwd_f32", "up_generic_fwd_f16", "up_generic_bwd_f32", "up_generic_bwd_f16"},
		"u_2_pack2x.cu":                   {"up2x_fwd_f32", "up2x_fwd_f16", "up2x_bwd_f32", "up2x_bwd_f16"},
		"solutions/ex1_mul_half8.cu":      {"mul_mine"},
		"solutions/ex2_up2x_bwd_half2.cu": {"up2x_bwd_mine"},
	}})
	if _, err := Source("nope.cu"); err == nil {
		t.Error("Source of a missing file: no error")
	}
}

// inflightBuilds are step 3's builds in the lesson's sweep: 1, 2 and 4 packs per thread, with and
// without the cache hint.
func inflightBuilds() [][]string {
	var out [][]string
	for _, ppt := range []string{"1", "2", "4"} {
		for _, hint := range []string{"0", "1"} {
			out = append(out, []string{"PPT=" + ppt, "HINT=" + hint})
		}
	}
	return out
}

package oneflow

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

// Every kernel file compiles with NVRTC for Ampere and Hopper (no GPU needed) and declares the
// kernels the lesson looks up.
func TestEveryFileCompiles(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	want := map[string][]string{
		"1_naive.cu":              {"mul_naive_f32", "mul_naive_f16"},
		"2_packed.cu":             {"mul_packed_f32", "mul_packed_f16", "mul_pack1_f32", "mul_pack1_f16"},
		"3_inflight.cu":           {"mul_inflight_f32", "mul_inflight_f16", "mul_inflight_pack1_f32", "mul_inflight_pack1_f16"},
		"a_1_half_atomic.cu":      {"dot_half_atomic"},
		"a_2_half2_atomic.cu":     {"dot_half2_atomic"},
		"a_3_fast_specialized.cu": {"dot_fast_atomic"},
		"a_4_block_reduce.cu":     {"dot_block_reduce"},
		"u_1_generic.cu":          {"up_generic_fwd_f32", "up_generic_fwd_f16", "up_generic_bwd_f32", "up_generic_bwd_f16"},
		"u_2_pack2x.cu":           {"up2x_fwd_f32", "up2x_fwd_f16", "up2x_bwd_f32", "up2x_bwd_f16"},
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
			for _, k := range want[f] {
				if !strings.Contains(res.PTX, ".entry "+k+"(") {
					t.Errorf("%s (%s): no kernel %s in the PTX", f, arch, k)
				}
			}
		}
	}
	// Step 3 compiles for every packs-per-thread and cache hint the lesson's sweep measures.
	for _, ppt := range []string{"1", "2", "4"} {
		for _, hint := range []string{"0", "1"} {
			src, err := Source("3_inflight.cu")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := compile.PTX(src, compile.Options{Arch: "compute_90", Defines: []string{"PPT=" + ppt, "HINT=" + hint}}); err != nil {
				t.Errorf("3_inflight.cu with PPT=%s HINT=%s: %v", ppt, hint, err)
			}
		}
	}
	if _, err := Source("nope.cu"); err == nil {
		t.Error("Source of a missing file: no error")
	}
}

package trilinear

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
		"1_article.cu":               {"tri_fw_article"},
		"2_coalesced.cu":             {"tri_fw_coalesced"},
		"3_float4.cu":                {"tri_fw_float4"},
		"4_half.cu":                  {"tri_fw_f16", "tri_fw_bf16", "tri_fw_f16_any", "tri_fw_bf16_any"},
		"5_backward_feats.cu":        {"tri_bw_feats_float4", "tri_bw_feats_any"},
		"6_backward_points.cu":       {"tri_bw_points", "tri_bw_points_float4"},
		"7_fused.cu":                 {"tri_train_fused", "tri_train_fused_float4"},
		"solutions/ex1_coalesced.cu": {"ex1_coalesced"},
		"solutions/ex2_dpoints.cu":   {"ex2_dpoints"},
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

package conv

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

// Every kernel file compiles with NVRTC for Ampere and Hopper (no GPU needed) without warnings,
// starts with its header comment and declares the kernels the lesson looks up; the fused atomic
// step also compiles without its ReLU (the lesson's demonstration).
func TestEveryFileCompiles(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	want := map[string][]string{
		"1_direct.cu":                    {"conv_direct"},
		"2_shared.cu":                    {"conv_shared"},
		"3_igemm.cu":                     {"conv_igemm"},
		"4_tensor_core.cu":               {"conv_tc_tf32", "conv_tc_fp16"},
		"5_cp_async.cu":                  {"conv_cpasync_tf32", "conv_cpasync_fp16"},
		"6_fused_atomic.cu":              {"conv_pool_atomic"},
		"7_fused_tile.cu":                {"conv_pool_tile"},
		"solutions/ex1_direct.cu":        {"ex1_direct"},
		"solutions/ex2_pool_any_sign.cu": {"ex2_pool_any_sign"},
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
		opts := []compile.Options{{Arch: "compute_80"}, {Arch: "compute_90"}}
		if f == "6_fused_atomic.cu" {
			opts = append(opts, compile.Options{Arch: "compute_90", Defines: []string{"NO_RELU"}})
		}
		for _, o := range opts {
			res, err := compile.PTX(src, o)
			if err != nil {
				t.Fatalf("%s %+v: %v", f, o, err)
			}
			if strings.Trim(res.Log, " \t\r\n\x00") != "" {
				t.Errorf("%s %+v: NVRTC warnings:\n%s", f, o, res.Log)
			}
			for _, k := range want[f] {
				if !strings.Contains(res.PTX, ".entry "+k+"(") {
					t.Errorf("%s %+v: no kernel %s in the PTX", f, o, k)
				}
			}
		}
	}
}

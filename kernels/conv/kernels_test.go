package conv

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile/compiletest"
)

// Every kernel file compiles with NVRTC for Ampere and Hopper (no GPU needed) without a warning,
// starts with its header comment and declares the kernels the lesson looks up; step 6 also
// without its ReLU, steps 3 and 5 also with the level-2 epilogue (EPILOGUE2).
func TestEveryFileCompiles(t *testing.T) {
	compiletest.Check(t, compiletest.Folder{Dir: Kernels, Builds: map[string][][]string{"6_fused_atomic.cu": {{"NO_RELU"}}, "3_igemm.cu": {{"EPILOGUE2"}}, "5_cp_async.cu": {{"EPILOGUE2"}}}, Kernels: map[string][]string{
		"1_direct.cu":                    {"conv_direct"},
		"2_shared.cu":                    {"conv_shared"},
		"3_igemm.cu":                     {"conv_igemm"},
		"4_tensor_core.cu":               {"conv_tc_tf32", "conv_tc_fp16"},
		"5_cp_async.cu":                  {"conv_cpasync_tf32", "conv_cpasync_fp16"},
		"6_fused_atomic.cu":              {"conv_pool_atomic"},
		"7_fused_tile.cu":                {"conv_pool_tile"},
		"solutions/ex1_direct.cu":        {"ex1_direct"},
		"solutions/ex2_pool_any_sign.cu": {"ex2_pool_any_sign"},
	}})
}

package vecadd

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile/compiletest"
)

// Every step compiles with NVRTC for Ampere and Hopper (no GPU needed) without a warning, starts
// with its header comment and declares the kernel the lesson looks up.
func TestEveryFileCompiles(t *testing.T) {
	compiletest.Check(t, compiletest.Folder{Dir: Kernels, Kernels: map[string][]string{
		"1_naive.cu":      {"add_naive"},
		"2_gridstride.cu": {"add_gridstride"},
		"3_float4.cu":     {"add_float4"},
	}})
}

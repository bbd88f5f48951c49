package compile

import (
	"slices"
	"testing"
)

func TestKernelsListsExternCGlobals(t *testing.T) {
	code := `// extern "C" __global__ void in_a_comment(int n) {}
/* extern "C" __global__ void in_a_block(int n) {} */
#include <cuda_fp16.h>
__device__ float helper(float x) { return x; }
extern "C" __global__ void first(float *x, int n) { }
extern "C" __global__ void __launch_bounds__(32 * (MAXC + 1), 2)
    second(const float *__restrict__ w) { }
extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(1024) clustered(float *x) { }
extern "C" __global__ void MAYBE_CLUSTER __launch_bounds__(THREADS, BLOCKS) behind_a_macro(float *x) { }
#if STEP == 2
extern "C"   __global__
void third (int n) { }
#endif
extern "C" __global__ void first(float *x, int n);
`
	got := Kernels(code)
	want := []string{"first", "second", "clustered", "behind_a_macro", "third"}
	if !slices.Equal(got, want) {
		t.Fatalf("Kernels = %v, want %v", got, want)
	}
	if got := Kernels("__global__ void mangled(int n) {}"); len(got) != 0 {
		t.Errorf("a kernel without extern \"C\" has no name to launch by, got %v", got)
	}
}

// Kernels a function-like macro defines are listed under the names its uses give them, and the
// macro's parameter is not a kernel.
func TestKernelsDefinedByAMacro(t *testing.T) {
	code := `extern "C" __global__ void before(int n) {}
#define MEAN16(name, T, VEC)                                     \
    extern "C" __global__ void name(const T *__restrict__ x) {   \
        if (VEC) { }                                             \
    }
MEAN16(mean_f16, __half, true)
MEAN16( mean_bf16 , __nv_bfloat16, false)
#define TWICE(x) ((x) + (x))
extern "C" __global__ void after(int n) { int y = TWICE(n); }
`
	got := Kernels(code)
	want := []string{"before", "mean_f16", "mean_bf16", "after"}
	if !slices.Equal(got, want) {
		t.Errorf("Kernels = %v, want %v", got, want)
	}
}

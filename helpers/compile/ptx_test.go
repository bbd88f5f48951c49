package compile

import "testing"

// Instructions reads a kernel's body from real NVRTC output: the loads' widths and the stores.
func TestInstructions(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	src := Source{Name: "ptx.cu", Code: `
extern "C" __global__ void wide(const float4 *x, float4 *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
extern "C" __global__ void asm_first(float *y) {
    float v;
    asm("{\n\tmov.f32 %0, 1.0;\n}" : "=f"(v));
    y[threadIdx.x] = v;
}
extern "C" __global__ void nothing(const float *x, int n) {
    __shared__ float s[32];
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
}`}
	res, err := PTX(src, Options{Arch: "compute_90"})
	if err != nil {
		t.Fatal(err)
	}
	wide, err := Instructions(res.PTX, "wide")
	if err != nil {
		t.Fatal(err)
	}
	var ld16, st16 bool
	for _, in := range wide {
		ld16 = ld16 || (in.Is("ld.global") && in.Bytes == 16)
		st16 = st16 || (in.Is("st.global") && in.Bytes == 16)
		if in.Is("bar.sync") {
			t.Errorf("wide has no barrier, found %s", in.Op)
		}
	}
	if !ld16 || !st16 {
		t.Errorf("wide: 16-byte load %v, 16-byte store %v in %+v", ld16, st16, wide)
	}
	nothing, err := Instructions(res.PTX, "nothing")
	if err != nil {
		t.Fatal(err)
	}
	var bar, st bool
	for _, in := range nothing {
		bar = bar || in.Is("bar.sync")
		st = st || in.Is("st.global")
	}
	if !bar || st {
		t.Errorf("nothing: barrier %v (want true), global store %v (want false): %+v", bar, st, nothing)
	}
	// Braces of inline asm do not end the body: the store after them is found.
	asm, err := Instructions(res.PTX, "asm_first")
	if err != nil {
		t.Fatal(err)
	}
	var asmStore bool
	for _, in := range asm {
		asmStore = asmStore || in.Is("st.global")
	}
	if !asmStore {
		t.Errorf("asm_first: the store after the inline asm is missing: %+v", asm)
	}
	if _, err := Instructions(res.PTX, "missing"); err == nil {
		t.Error("a kernel that is not in the PTX was found")
	}
}

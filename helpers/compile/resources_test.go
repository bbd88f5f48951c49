package compile

import (
	"testing"
)

func TestInspectFindsSharedMemoryOverTheLimit(t *testing.T) {
	over := Source{Name: "over.cu", Code: `extern "C" __global__ void big(const float* a, float* c) {
	__shared__ float tile[100000];
	tile[threadIdx.x] = a[threadIdx.x];
	__syncthreads();
	c[threadIdx.x] = tile[(threadIdx.x + 1) % 100000];
}
extern "C" __global__ void small(const float* a, float* c) { c[threadIdx.x] = a[threadIdx.x] * 2.0f; }`}
	res, err := Inspect(over, Options{Arch: "compute_90"})
	if err == nil {
		t.Fatal("400000 bytes of static shared memory assembled for sm_90")
	}
	var big *Resources
	for i := range res {
		if res[i].Kernel == "big" {
			big = &res[i]
		}
	}
	if big == nil || !big.SharedOver || big.SharedBytes != 400000 || big.SharedMax != 48*1024 {
		t.Fatalf("resources %+v: want big refused with 400000 bytes over 49152", res)
	}
	res, err = Inspect(Source{Name: "ok.cu", Code: `extern "C" __global__ void s(float* c) { __shared__ float t[256]; t[threadIdx.x] = c[threadIdx.x] * 2; __syncthreads(); c[threadIdx.x] = t[255 - threadIdx.x]; }`}, Options{Arch: "compute_80"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Kernel != "s" || res[0].SharedBytes != 1024 || res[0].Registers == 0 || res[0].SharedOver {
		t.Fatalf("resources %+v: want s with 1024 bytes of shared memory and its registers", res)
	}
}

func TestKiB(t *testing.T) {
	if got := KiB(400000); got != "400000 bytes (390.6 KiB)" {
		t.Error(got)
	}
	if got := KiB(49152); got != "49152 bytes (48 KiB)" {
		t.Error(got)
	}
}

// ptxas of CUDA 12 and 13 writes the barriers between the registers and the shared memory; 11.8
// does not. Both logs give the same figures.
func TestUsageReadsBothLogFormats(t *testing.T) {
	for _, line := range []string{
		"ptxas info    : Used 10 registers, 1024 bytes smem, 352 bytes cmem[0]",
		"ptxas info    : Used 10 registers, used 1 barriers, 1024 bytes smem, 352 bytes cmem[0]",
	} {
		log := "ptxas info    : Compiling entry function 's' for 'sm_90'\n" + line + "\n"
		if r := Usage(log); len(r) != 1 || r[0].Registers != 10 || r[0].SharedBytes != 1024 {
			t.Errorf("%q: %+v, want 10 registers and 1024 bytes of shared memory", line, r)
		}
	}
}

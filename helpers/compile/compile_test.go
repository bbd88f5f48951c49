package compile

import (
	"errors"
	"strings"
	"testing"
)

func TestPTXCompilesAndCaches(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	src := Source{Name: "scale.cu", Code: `extern "C" __global__ void scale(float *x, float a, int n) {
	__shared__ float tile[64];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	tile[threadIdx.x % 64] = x[i % n];
	if (i < n) x[i] = a * tile[threadIdx.x % 64];
}`}
	res, err := PTX(src, Options{Arch: "compute_80"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Cached {
		t.Error("first compilation reported as cached")
	}
	for _, want := range []string{".visible .entry scale", ".target sm_80"} {
		if !strings.Contains(res.PTX, want) {
			t.Errorf("PTX lacks %q", want)
		}
	}
	if got := StaticSharedBytes(res.PTX); got != 256 {
		t.Errorf("static shared = %d bytes, want 256", got)
	}
	again, err := PTX(src, Options{Arch: "compute_80"})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Cached || again.PTX != res.PTX {
		t.Errorf("second compilation: cached=%v, same PTX=%v", again.Cached, again.PTX == res.PTX)
	}
	other, err := PTX(src, Options{Arch: "compute_80", Defines: []string{"X=1"}})
	if err != nil {
		t.Fatal(err)
	}
	if other.Cached {
		t.Error("different options hit the cache")
	}
}

func TestCompileErrorShowsLogAndLines(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	code := "extern \"C\" __global__ void k(float *x) {\n  int i = threadIdx.x;\n  x[i] = undefined_name;\n}\n"
	_, err := PTX(Source{Name: "broken.cu", Code: code}, Options{})
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("want a *compile.Error, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"undefined_name", "broken.cu, line 3", ">    3 |   x[i] = undefined_name;"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error message lacks %q:\n%s", want, msg)
		}
	}
}

func TestBadArch(t *testing.T) {
	_, err := PTX(Source{Name: "a.cu", Code: ""}, Options{Arch: "sm_90"})
	if err == nil || !strings.Contains(err.Error(), "compute_90") {
		t.Errorf("want an error that names the virtual architecture, got %v", err)
	}
}

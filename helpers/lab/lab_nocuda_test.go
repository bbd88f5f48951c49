//go:build nocuda

package lab

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

func TestNoGPUModeCompilesButDoesNotRun(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	env, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if env.GPU() || env.Session != nil {
		t.Fatal("the nocuda build opened a GPU")
	}
	if b := env.Banner(); !strings.Contains(b, "No-GPU mode") || !strings.Contains(b, "nocuda") {
		t.Errorf("banner does not say the mode and why: %s", b)
	}
	prog, err := env.Build(compile.Source{Name: "k.cu", Code: `extern "C" __global__ void k(float *x) { __shared__ float s[8]; s[threadIdx.x] = 1; x[threadIdx.x] = s[0]; }`}, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prog.Kernel("k"); err == nil || !strings.Contains(err.Error(), "no-GPU mode") {
		t.Errorf("running a kernel without a GPU: %v", err)
	}
	if r := prog.Report("k", 128, 0); r.Measured || r.StaticSharedBytes != 32 {
		t.Errorf("no-GPU report %+v", r)
	}
	if _, err := env.Build(compile.Source{Name: "bad.cu", Code: "this is not CUDA"}); err == nil {
		t.Error("a broken kernel compiled")
	}
}

// BuildExercise turns a compile error or a missing kernel into a failed result that says so, not an
// error; a good source builds.
func TestBuildExercise(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	env, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	x := Exercise{Number: 1, Kernel: "mine"}
	good := `extern "C" __global__ void mine(float *x) { x[threadIdx.x] = 1; }`
	if p, r, err := env.BuildExercise(x, good); err != nil || p == nil || !r.Compiled {
		t.Errorf("good source: %+v %v", r, err)
	}
	p, r, err := env.BuildExercise(x, good+"\nthis is not CUDA\n")
	if err != nil || p != nil || r.Compiled || r.Passed || !strings.HasPrefix(r.Reason, "It does not compile: ") ||
		!strings.Contains(r.Log, "this is not CUDA") {
		t.Errorf("compile error: %+v %v", r, err)
	}
	p, r, err = env.BuildExercise(x, `extern "C" __global__ void yours(float *x) {}`)
	if err != nil || p != nil || r.Passed || !strings.Contains(r.Reason, "defines no kernel mine") {
		t.Errorf("wrong name: %+v %v", r, err)
	}
}

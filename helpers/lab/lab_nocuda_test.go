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

// KERNELS_EMULATE in the no-GPU mode: kernels compile for the profile, plans see its limits, the
// banner says so, and a profile newer than the recorded GPU is refused.
func TestNoGPUModeEmulates(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	t.Setenv("KERNELS_EMULATE", "t4")
	env, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	if env.Arch() != "compute_75" || env.Emulating() != "t4" || env.Device().SMs != 40 || env.Device().MaxSharedPerBlockOptin != 64<<10 {
		t.Errorf("emulated T4: arch %s, emulating %q, device %+v", env.Arch(), env.Emulating(), env.Device())
	}
	if b := env.Banner(); !strings.Contains(b, "compute_75") || !strings.Contains(b, "Emulating the t4 limits") {
		t.Errorf("banner: %s", b)
	}
	_, err = env.Build(compile.Source{Name: "async.cu", Code: "// Needs: compute capability 8.0 (cp.async).\nextern \"C\" __global__ void k() {}\n"})
	if !IsRefusal(err) || !strings.Contains(err.Error(), "async.cu needs compute capability 8.0 (cp.async)") {
		t.Errorf("an 8.0 source on an emulated T4: want a refusal, got %v", err)
	}
	t.Setenv("KERNELS_EMULATE", "rtx5090")
	if _, err := Open(); err == nil || !strings.Contains(err.Error(), "cannot emulate") {
		t.Errorf("the recorded H100 emulating an RTX 5090: want a refusal, got %v", err)
	}
}

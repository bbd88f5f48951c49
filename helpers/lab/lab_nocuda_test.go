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

// The doctor names the NVRTC, the architecture and the cgo headers .ci/env.sh picked, and no folder
// under the user's home (a notebook's committed outputs must name no machine's paths).
func TestDoctorNamesNVRTCArchAndNoHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("KERNELS_CACHE_DIR", "")
	t.Setenv("KERNELS_CGO_CUDA", "11.8")
	env, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	rows := map[string]string{}
	for _, r := range Doctor(env).Rows {
		rows[r[0]] = r[1]
	}
	if !strings.Contains(rows["NVRTC"], "NVRTC "+env.Receipt.NVRTC+", loaded from ") {
		t.Errorf("NVRTC row %q does not say the version and the library", rows["NVRTC"])
	}
	if !strings.HasPrefix(rows["kernels compile for"], env.Arch()+" (NVRTC ") {
		t.Errorf("architecture row %q", rows["kernels compile for"])
	}
	if !strings.Contains(rows["cgo headers"], "CUDA 11.8") {
		t.Errorf("cgo headers row %q", rows["cgo headers"])
	}
	if got := rows["PTX cache"]; got != "~/.cache/cudalessons/ptx" {
		t.Errorf("PTX cache shown as %q, want it relative to home", got)
	}
	for k, v := range rows {
		if strings.Contains(v, home) {
			t.Errorf("doctor row %q names the home folder: %s", k, v)
		}
	}
}

func TestHomeRelative(t *testing.T) {
	t.Setenv("HOME", "/home/ada")
	for in, want := range map[string]string{
		"/home/ada/.cache/x": "~/.cache/x",
		"/home/adam/x":       "/home/adam/x",
		"/usr/include":       "/usr/include",
	} {
		if got := homeRelative(in); got != want {
			t.Errorf("homeRelative(%q) = %q, want %q", in, got, want)
		}
	}
}

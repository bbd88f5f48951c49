package lab

import (
	"os"
	"strings"
	"testing"
)

// The doctor names the NVRTC, the architecture and the cgo headers .ci/env.sh picked (in the GPU
// build: the cuda.h cgo really compiled against), and no folder under the user's home (a notebook's
// committed outputs must name no machine's paths). It runs in both builds.
func TestDoctorNamesNVRTCArchAndNoHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("KERNELS_CACHE_DIR", "")
	t.Setenv("KERNELS_SEAT", "ada: GPU 1, NVIDIA H100 80GB HBM3 (GPU-1234), yours alone") // as the classroom hub sets it
	headers := os.Getenv("KERNELS_CGO_CUDA")
	if headers == "" {
		headers = "11.8"
		t.Setenv("KERNELS_CGO_CUDA", headers) // as .ci/env.sh would
	}
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
	if !strings.Contains(rows["cgo headers"], "CUDA "+headers+"'s cuda.h") {
		t.Errorf("cgo headers row %q", rows["cgo headers"])
	}
	if got := rows["seat"]; got != os.Getenv("KERNELS_SEAT") {
		t.Errorf("seat row %q, want the hub's KERNELS_SEAT", got)
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

// With KERNELS_CACHE_DIR set, the doctor names the cache by the variable, not by the machine's path.
func TestCacheShown(t *testing.T) {
	t.Setenv("HOME", "/home/ada")
	t.Setenv("KERNELS_CACHE_DIR", "/tmp/run7/cache")
	if got := cacheShown("/tmp/run7/cache/ptx"); got != "$KERNELS_CACHE_DIR/ptx" {
		t.Errorf("cacheShown = %q", got)
	}
	t.Setenv("KERNELS_CACHE_DIR", "")
	if got := cacheShown("/home/ada/.cache/cudalessons/ptx"); got != "~/.cache/cudalessons/ptx" {
		t.Errorf("cacheShown without the variable = %q", got)
	}
}

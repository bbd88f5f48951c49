package compile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// NVRTC's own lists (nvrtcGetSupportedArchs) of CUDA 11.8 and 13.0.
var (
	nvrtc118 = []int{35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90}
	nvrtc130 = []int{75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121}
)

func TestCheckArchSaysWhatTheNVRTCTargets(t *testing.T) {
	cases := []struct {
		arch, version string
		supported     []int
		wantErr       []string // nil: supported
	}{
		{"compute_90", "11.8", nvrtc118, nil},
		{"compute_90a", "13.0", nvrtc130, nil},
		{"compute_90a", "11.8", nvrtc118, []string{"NVRTC 11.8 cannot compile for compute_90a", "came with CUDA 12.0"}},
		{"compute_120", "11.8", nvrtc118, []string{"NVRTC 11.8 cannot compile for compute_120 (compute capability 12.0)", "compute_35 to compute_90", "Install a newer CUDA toolkit"}},
		{"compute_100", "11.8", nvrtc118, []string{"compute_100", "CUDA_NVRTC_HOME"}},
		{"compute_70", "13.0", nvrtc130, []string{"NVRTC 13.0 cannot compile for compute_70 (compute capability 7.0)", "compute_75 to compute_121", "CUDA_NVRTC_HOME to a CUDA 12.x toolkit"}},
		{"compute_85", "13.0", nvrtc130, []string{"but not this one"}},
		{"sm_90", "13.0", nvrtc130, []string{"virtual architecture"}},
	}
	for _, c := range cases {
		err := checkArch(c.arch, c.version, c.supported)
		if c.wantErr == nil {
			if err != nil {
				t.Errorf("%s with NVRTC %s: %v", c.arch, c.version, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s with NVRTC %s: no error", c.arch, c.version)
			continue
		}
		for _, w := range c.wantErr {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s with NVRTC %s: error %q lacks %q", c.arch, c.version, err, w)
			}
		}
		var ae *ArchError
		isArch := errors.As(fmt.Errorf("compiling k.cu to a cubin: %w", err), &ae)
		if wantArch := strings.HasPrefix(c.arch, "compute_"); isArch != wantArch {
			t.Errorf("%s with NVRTC %s: an *ArchError is %v, want %v (%v)", c.arch, c.version, isArch, wantArch, err)
		} else if isArch && (ae.Arch != c.arch || ae.NVRTC != c.version) {
			t.Errorf("%s with NVRTC %s: ArchError names %s and NVRTC %s", c.arch, c.version, ae.Arch, ae.NVRTC)
		}
	}
}

// PTX refuses an architecture beyond the loaded NVRTC with the clear error, before compiling.
func TestPTXRefusesAnArchitectureNVRTCLacks(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	archs, err := SupportedArchs()
	if err != nil {
		t.Fatal(err)
	}
	if len(archs) == 0 || archs[0] < 30 {
		t.Fatalf("NVRTC's supported architectures look wrong: %v", archs)
	}
	beyond := archs[len(archs)-1] + 10
	_, err = PTX(Source{Name: "k.cu", Code: `extern "C" __global__ void k() {}`}, Options{Arch: "compute_" + itoa(beyond)})
	if err == nil || !strings.Contains(err.Error(), "cannot compile for compute_"+itoa(beyond)) {
		t.Errorf("compiling for compute_%d: want the architecture error, got %v", beyond, err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// The libnvrtc this process loaded is the one .ci/env.sh picked (make test sources it): the version
// NVRTC reports and the folder the loader took it from.
func TestLoadedNVRTCIsTheSelectedOne(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/maps")
	}
	lib := Library()
	if lib == "" {
		t.Fatal("no libnvrtc in /proc/self/maps")
	}
	v, err := Version()
	if err != nil {
		t.Fatal(err)
	}
	archs, _ := SupportedArchs()
	t.Logf("NVRTC %s from %s, architectures %v", v, lib, archs)
	if want := os.Getenv("KERNELS_NVRTC_CUDA"); want != "" && v != want {
		t.Errorf("NVRTC %s is loaded; .ci/env.sh picked %s", v, want)
	}
	if dir := os.Getenv("KERNELS_NVRTC_LIBDIR"); dir != "" {
		want, err1 := filepath.EvalSymlinks(dir)
		got, err2 := filepath.EvalSymlinks(filepath.Dir(lib))
		if err1 != nil || err2 != nil || want != got {
			t.Errorf("libnvrtc loaded from %s; .ci/env.sh picked %s", lib, dir)
		}
	}
}

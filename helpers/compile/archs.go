package compile

// #cgo LDFLAGS: -lnvrtc
// #include <nvrtc.h>
import "C"

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// SupportedArchs are the architectures the loaded NVRTC compiles for, as compute capabilities times
// ten (75 for compute_75), in increasing order: NVRTC's own list (nvrtcGetSupportedArchs).
func SupportedArchs() ([]int, error) { return supportedArchs() }

var supportedArchs = sync.OnceValues(func() ([]int, error) {
	nvrtcMu.Lock()
	defer nvrtcMu.Unlock()
	var n C.int
	if r := C.nvrtcGetNumSupportedArchs(&n); r != C.NVRTC_SUCCESS || n <= 0 {
		return nil, fmt.Errorf("asking NVRTC which architectures it supports: %s", C.GoString(C.nvrtcGetErrorString(r)))
	}
	archs := make([]C.int, n)
	if r := C.nvrtcGetSupportedArchs((*C.int)(unsafe.Pointer(&archs[0]))); r != C.NVRTC_SUCCESS {
		return nil, fmt.Errorf("asking NVRTC which architectures it supports: %s", C.GoString(C.nvrtcGetErrorString(r)))
	}
	out := make([]int, n)
	for i, a := range archs {
		out[i] = int(a)
	}
	return out, nil
})

// CheckArch says whether the loaded NVRTC can compile for arch (for example "compute_90" or
// "compute_90a"), and if not, why and what to do: NVRTC 11.8 stops at compute_90 (Hopper) and cannot
// compile for Blackwell (compute_100, compute_120); NVRTC 13 no longer takes Volta (compute_70).
func CheckArch(arch string) error {
	supported, err := SupportedArchs()
	if err != nil {
		return err
	}
	version, err := Version()
	if err != nil {
		return err
	}
	return checkArch(arch, version, supported)
}

func checkArch(arch, version string, supported []int) error {
	digits := strings.TrimRight(strings.TrimPrefix(arch, "compute_"), "abf")
	cc, err := strconv.Atoi(digits)
	if err != nil || !strings.HasPrefix(arch, "compute_") {
		return fmt.Errorf("architecture %q: NVRTC makes PTX for a virtual architecture such as compute_90", arch)
	}
	if strings.HasSuffix(arch, "a") && compareVersions(version, "12.0") < 0 {
		return &ArchError{Arch: arch, NVRTC: version, msg: fmt.Sprintf("NVRTC %s cannot compile for %s: architecture-specific targets (the \"a\" suffix: wgmma, setmaxnreg) came with CUDA 12.0. Install CUDA 12.0 or newer (CUDA 13 is fine: .ci/env.sh picks the newest NVRTC), or set CUDA_NVRTC_HOME to one", version, arch)}
	}
	for _, a := range supported {
		if a == cc {
			return nil
		}
	}
	lo, hi := supported[0], supported[len(supported)-1]
	msg := fmt.Sprintf("NVRTC %s cannot compile for %s (compute capability %d.%d): it targets compute_%d to compute_%d", version, arch, cc/10, cc%10, lo, hi)
	e := &ArchError{Arch: arch, NVRTC: version}
	switch {
	case cc > hi:
		e.msg = msg + ". Install a newer CUDA toolkit (12.8 or newer for Blackwell; CUDA 13 is fine: .ci/env.sh picks the newest NVRTC and keeps 11.8/12.x headers for cgo), or set CUDA_NVRTC_HOME to one"
	case cc < lo:
		e.msg = msg + ". This GPU needs an older NVRTC (CUDA 12.x still targets Volta, compute_70): set CUDA_NVRTC_HOME to a CUDA 12.x toolkit and source .ci/env.sh again"
	default:
		e.msg = msg + ", but not this one"
	}
	return e
}

// ArchError is CheckArch's refusal of an architecture the loaded NVRTC cannot compile for (not a
// fault of the source): errors.As finds it under CompileCubin's and Assemble's errors, so that a
// caller can show what was recorded with a newer NVRTC instead.
type ArchError struct {
	Arch  string // the architecture asked for, "compute_90a"
	NVRTC string // the loaded NVRTC's version, "11.8"
	msg   string
}

// Error says which NVRTC cannot compile for which architecture, and what to install.
func (e *ArchError) Error() string { return e.msg }

// Library is the path of the libnvrtc this process loaded (from /proc/self/maps), or "" where that
// cannot be read. It shows which NVRTC a program uses when several CUDA versions are installed.
func Library() string {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 6 && strings.HasPrefix(filepath.Base(fields[5]), "libnvrtc.so") {
			return fields[5]
		}
	}
	return ""
}

// compareVersions compares dotted versions ("11.8", "12.0") number by number: -1, 0 or 1. A part
// that is not a number counts as 0.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

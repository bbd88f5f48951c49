package compile

// #cgo LDFLAGS: -lnvrtc
// #include <stdlib.h>
// #include <nvrtc.h>
import "C"

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// Cubin is a source compiled to machine code for one real architecture: the ELF image the driver
// loads, which nvdisasm turns into SASS.
type Cubin struct {
	Name   string   `json:"name"`
	Image  []byte   `json:"-"`
	Log    string   `json:"log,omitempty"`
	Arch   string   `json:"arch"` // the real architecture, sm_90
	Flags  []string `json:"flags"`
	NVRTC  string   `json:"nvrtc"`
	Cached bool     `json:"cached"`
	// LineInfo says the cubin keeps each instruction's source line (-lineinfo): NVRTC 12 and newer.
	LineInfo bool          `json:"line_info"`
	Duration time.Duration `json:"duration_ns"`
}

// CompileCubin compiles src for the real architecture of opts.Arch (compute_90 and sm_90 both mean
// sm_90; compute_90a means sm_90a) with -lineinfo where lineInfoSafe allows it, so that every
// instruction of the machine code keeps the source line it came from. It takes the path Assemble takes (the same flags, the same
// refusal of a source below its declared need) and returns the cubin, cached on disk like PTX.
// No GPU is needed.
func CompileCubin(src Source, opts Options) (*Cubin, error) {
	if opts.Arch == "" {
		opts.Arch = DefaultArch
	}
	opts.Arch = "compute_" + strings.TrimPrefix(strings.TrimPrefix(opts.Arch, "sm_"), "compute_")
	lineInfo := lineInfoSafe()
	if lineInfo {
		opts.Extra = append(append([]string(nil), opts.Extra...), "-lineinfo")
	}
	flags, err := Flags(opts)
	if err != nil {
		return nil, fmt.Errorf("compiling %s to a cubin: %w", src.Name, err)
	}
	if err := CheckArch(opts.Arch); err != nil {
		return nil, fmt.Errorf("compiling %s to a cubin: %w", src.Name, err)
	}
	if err := Fits(src, opts); err != nil {
		return nil, err
	}
	sm := "sm_" + strings.TrimPrefix(opts.Arch, "compute_")
	flags[0] = "--gpu-architecture=" + sm
	version, err := Version()
	if err != nil {
		return nil, err
	}
	out := &Cubin{Name: src.Name, Arch: sm, Flags: flags, NVRTC: version, LineInfo: lineInfo}
	key := cacheKey(src.Code, flags, version)
	if !opts.NoCache {
		if b, err := readCubinCache(key); err == nil {
			out.Image, out.Cached = b, true
			return out, nil
		}
	}
	start := time.Now()
	nvrtcMu.Lock()
	image, log, err := runCubin(src, flags)
	nvrtcMu.Unlock()
	out.Duration = time.Since(start)
	out.Log = strings.TrimSpace(log)
	if err != nil {
		return nil, err
	}
	out.Image = image
	writeCubinCache(key, image)
	return out, nil
}

// runCubin compiles src with flags (a real architecture) and returns the cubin and NVRTC's log.
// gorgonia.org/cu/nvrtc has no nvrtcGetCUBIN, so the program's life is driven here through cgo.
func runCubin(src Source, flags []string) (image []byte, log string, err error) {
	csrc, cname := C.CString(src.Code), C.CString(src.Name)
	defer C.free(unsafe.Pointer(csrc))
	defer C.free(unsafe.Pointer(cname))
	var prog C.nvrtcProgram
	if r := C.nvrtcCreateProgram(&prog, csrc, cname, 0, nil, nil); r != C.NVRTC_SUCCESS {
		return nil, "", fmt.Errorf("NVRTC could not create a program for %s: %s", src.Name, nvrtcError(r))
	}
	defer C.nvrtcDestroyProgram(&prog)
	copts := make([]*C.char, len(flags))
	for i, f := range flags {
		copts[i] = C.CString(f)
		defer C.free(unsafe.Pointer(copts[i]))
	}
	var optp **C.char
	if len(copts) > 0 {
		optp = &copts[0]
	}
	cr := C.nvrtcCompileProgram(prog, C.int(len(copts)), optp)
	var logSize C.size_t
	if C.nvrtcGetProgramLogSize(prog, &logSize) == C.NVRTC_SUCCESS && logSize > 1 {
		buf := make([]byte, logSize)
		if C.nvrtcGetProgramLog(prog, (*C.char)(unsafe.Pointer(&buf[0]))) == C.NVRTC_SUCCESS {
			log = strings.TrimRight(string(buf), "\x00")
		}
	}
	if cr != C.NVRTC_SUCCESS {
		return nil, log, &Error{Name: src.Name, Log: log, Code: src.Code, Flags: flags}
	}
	var size C.size_t
	if r := C.nvrtcGetCUBINSize(prog, &size); r != C.NVRTC_SUCCESS {
		return nil, log, fmt.Errorf("reading the cubin size of %s: %s", src.Name, nvrtcError(r))
	}
	if size == 0 {
		return nil, log, fmt.Errorf("NVRTC made no cubin for %s (flags %s): a real architecture (sm_XX) is needed", src.Name, strings.Join(flags, " "))
	}
	image = make([]byte, size)
	if r := C.nvrtcGetCUBIN(prog, (*C.char)(unsafe.Pointer(&image[0]))); r != C.NVRTC_SUCCESS {
		return nil, log, fmt.Errorf("reading the cubin of %s: %s", src.Name, nvrtcError(r))
	}
	return image, log, nil
}

func nvrtcError(r C.nvrtcResult) string { return C.GoString(C.nvrtcGetErrorString(r)) }

func readCubinCache(key string) ([]byte, error) {
	b, err := readCacheFile(key, ".cubin")
	if err != nil {
		return nil, err
	}
	if len(b) < 4 || string(b[1:4]) != "ELF" {
		return nil, errors.New("not a cubin")
	}
	return b, nil
}

func writeCubinCache(key string, image []byte) { writeCacheFile(key, ".cubin", image) }

// lineInfoSafe reports whether this NVRTC may compile for a real architecture with -lineinfo:
// NVRTC 11.8 dies of a stack overflow inside nvrtcCompileProgram on some kernels with it for sm_90
// (lesson 06's 4_half.cu, lesson 02's generic upsample), taking the whole process with it, so
// before 12 the machine code is made without source lines.
func lineInfoSafe() bool {
	v, err := Version()
	if err != nil {
		return false
	}
	major, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(major)
	return err == nil && n >= 12
}

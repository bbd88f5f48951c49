// Package compile turns CUDA C into PTX with NVRTC, the runtime compiler, for a chosen GPU
// architecture. It needs no GPU, so kernels compile (and their errors show) in the no-GPU mode too.
//
//	res, err := compile.PTX(compile.Source{Name: "add.cu", Code: src}, compile.Options{Arch: "compute_90"})
//
// Results are cached on disk, keyed by a hash of the source, the options and the NVRTC version: each
// notebook cell is a new process, and nothing that did not change is compiled again. A compile error
// is a *Error whose message holds NVRTC's log with the offending source lines beside it.
package compile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"gorgonia.org/cu/nvrtc"
)

// Source is one CUDA C translation unit. Name appears in NVRTC's messages.
type Source struct {
	Name string
	Code string
}

// Options choose how NVRTC compiles.
type Options struct {
	// Arch is the virtual architecture, for example "compute_90". Empty means DefaultArch.
	Arch string
	// FastMath adds --use_fast_math (approximate division, sqrt and transcendentals, flush to zero).
	FastMath bool
	// Defines are -D flags, each "NAME" or "NAME=VALUE".
	Defines []string
	// Extra are passed to NVRTC as they are.
	Extra []string
	// NoCache compiles even when a cached PTX exists.
	NoCache bool
}

// DefaultArch is used when Options.Arch is empty: Turing (sm_75), the oldest architecture NVRTC 13
// still targets (CUDA 13 dropped Volta and older).
const DefaultArch = "compute_75"

// Result is a compiled kernel: its PTX, NVRTC's log (warnings) and how it was obtained.
type Result struct {
	Name     string        `json:"name"`
	PTX      string        `json:"-"`
	Log      string        `json:"log,omitempty"`
	Arch     string        `json:"arch"`
	Flags    []string      `json:"flags"`
	NVRTC    string        `json:"nvrtc"`
	Cached   bool          `json:"cached"`
	Duration time.Duration `json:"duration_ns"`
}

// Error is a failed compilation: NVRTC's log and the source, shown together.
type Error struct {
	Name  string
	Log   string
	Code  string
	Flags []string
}

var lineRef = regexp.MustCompile(`\((\d+)\): (error|warning)`)

// Error shows NVRTC's log, then each source line the log names with two lines of context.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "compiling %s with NVRTC failed (flags %s):\n%s", e.Name, strings.Join(e.Flags, " "), strings.TrimSpace(e.Log))
	lines := strings.Split(e.Code, "\n")
	seen := map[int]bool{}
	for _, m := range lineRef.FindAllStringSubmatch(e.Log, -1) {
		n, _ := strconv.Atoi(m[1])
		if n < 1 || n > len(lines) || seen[n] {
			continue
		}
		seen[n] = true
		fmt.Fprintf(&b, "\n\n%s, line %d:", e.Name, n)
		for i := max(1, n-2); i <= min(len(lines), n+2); i++ {
			mark := "  "
			if i == n {
				mark = "> "
			}
			fmt.Fprintf(&b, "\n%s%4d | %s", mark, i, lines[i-1])
		}
	}
	return b.String()
}

// Version is the NVRTC library's version, as "13.0".
func Version() (string, error) {
	maj, min, err := nvrtc.Version()
	if err != nil {
		return "", fmt.Errorf("asking NVRTC for its version: %w", err)
	}
	return fmt.Sprintf("%d.%d", maj, min), nil
}

// IncludeDir finds the folder that holds cuda_fp16.h and the other headers kernels include: the
// folder of the NVRTC that .ci/env.sh picked ($KERNELS_NVRTC_INCLUDE, so that NVRTC reads headers of
// its own version), $CUDA_HOME/include, /usr/local/cuda/include, then /usr/include.
func IncludeDir() (string, error) {
	var tried []string
	if d := os.Getenv("KERNELS_NVRTC_INCLUDE"); d != "" {
		tried = append(tried, d)
	}
	for _, d := range []string{os.Getenv("CUDA_HOME"), os.Getenv("CUDA_PATH"), "/usr/local/cuda"} {
		if d != "" {
			tried = append(tried, filepath.Join(d, "include"))
		}
	}
	tried = append(tried, "/usr/include")
	for _, d := range tried {
		if _, err := os.Stat(filepath.Join(d, "cuda_fp16.h")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("cuda_fp16.h not found in %s: install the CUDA headers (bash .ci/setup.sh) or set CUDA_HOME", strings.Join(tried, ", "))
}

// Flags are the NVRTC command-line options for opts.
func Flags(opts Options) ([]string, error) {
	arch := opts.Arch
	if arch == "" {
		arch = DefaultArch
	}
	if !strings.HasPrefix(arch, "compute_") {
		return nil, fmt.Errorf("architecture %q: NVRTC makes PTX for a virtual architecture such as compute_90", arch)
	}
	inc, err := IncludeDir()
	if err != nil {
		return nil, err
	}
	flags := []string{"--gpu-architecture=" + arch, "-I" + inc, "--std=c++17"}
	if opts.FastMath {
		flags = append(flags, "--use_fast_math")
	}
	for _, d := range opts.Defines {
		flags = append(flags, "-D"+d)
	}
	if os.Getenv(LineInfoEnv) != "" {
		flags = append(flags, "--generate-line-info")
	}
	return append(flags, opts.Extra...), nil
}

// LineInfoEnv, when set, makes every compile keep line information (--generate-line-info), so
// that compute-sanitizer and Nsight Compute name the source line of a kernel's instruction. The
// lab's Sanitize sets it for the rerun it watches.
const LineInfoEnv = "KERNELS_LINEINFO"

// The NVRTC library is not documented as safe for concurrent programs; tests run in parallel.
var nvrtcMu sync.Mutex

// PTX compiles src for opts.Arch, from the disk cache when it holds the same source, options and
// NVRTC version.
func PTX(src Source, opts Options) (*Result, error) {
	flags, err := Flags(opts)
	if err != nil {
		return nil, fmt.Errorf("compiling %s: %w", src.Name, err)
	}
	version, err := Version()
	if err != nil {
		return nil, err
	}
	if err := CheckArch(strings.TrimPrefix(flags[0], "--gpu-architecture=")); err != nil {
		return nil, fmt.Errorf("compiling %s: %w", src.Name, err)
	}
	if err := Fits(src, opts); err != nil {
		return nil, err
	}
	res := &Result{Name: src.Name, Arch: strings.TrimPrefix(flags[0], "--gpu-architecture="), Flags: flags, NVRTC: version}
	key := cacheKey(src.Code, flags, version)
	if !opts.NoCache {
		if ptx, err := readCache(key); err == nil {
			res.PTX, res.Cached = ptx, true
			return res, nil
		}
	}
	start := time.Now()
	nvrtcMu.Lock()
	ptx, log, err := run(src, flags, true)
	nvrtcMu.Unlock()
	res.Duration = time.Since(start)
	res.Log = strings.TrimSpace(log)
	if err != nil {
		return nil, err
	}
	res.PTX = ptx
	writeCache(key, ptx) // a cache that cannot be written only costs a recompilation
	return res, nil
}

// run compiles src with flags and returns NVRTC's log and, when wantPTX, the PTX.
func run(src Source, flags []string, wantPTX bool) (ptx, log string, err error) {
	prog, err := nvrtc.CreateProgram(src.Code, src.Name)
	if err != nil {
		return "", "", fmt.Errorf("NVRTC could not create a program for %s: %w", src.Name, err)
	}
	defer prog.Destroy()
	cerr := prog.Compile(flags...)
	log, _ = prog.GetLog()
	log = strings.ReplaceAll(log, "\x00", "") // ptxas's part of the log comes NUL-separated
	if cerr != nil {
		return "", log, &Error{Name: src.Name, Log: log, Code: src.Code, Flags: flags}
	}
	if !wantPTX {
		return "", log, nil
	}
	ptx, err = prog.GetPTX()
	if err != nil {
		return "", log, fmt.Errorf("reading the PTX of %s: %w", src.Name, err)
	}
	return strings.TrimRight(ptx, "\x00"), log, nil
}

func cacheKey(code string, flags []string, version string) string {
	h := sha256.New()
	fmt.Fprintf(h, "nvrtc %s\n%s\n", version, strings.Join(flags, "\x00"))
	h.Write([]byte(code))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// CacheDir is where compiled PTX is kept: $KERNELS_CACHE_DIR, or the user's cache folder.
func CacheDir() (string, error) {
	if d := os.Getenv("KERNELS_CACHE_DIR"); d != "" {
		return filepath.Join(d, "ptx"), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "cudalessons", "ptx"), nil
}

func readCache(key string) (string, error) {
	b, err := readCacheFile(key, ".ptx")
	if err != nil {
		return "", err
	}
	if len(b) == 0 {
		return "", errors.New("empty cache entry")
	}
	return string(b), nil
}

func writeCache(key, ptx string) { writeCacheFile(key, ".ptx", []byte(ptx)) }

// readCacheFile reads the cache's entry key with extension ext (".ptx", ".cubin").
func readCacheFile(key, ext string) ([]byte, error) {
	dir, err := CacheDir()
	if err != nil {
		return nil, err
	}
	return os.ReadFile(filepath.Join(dir, key+ext))
}

// writeCacheFile writes the cache's entry key with extension ext whole or not at all (a temporary
// file renamed into place); a cache that cannot be written is no error, only slower.
func writeCacheFile(key, ext string, data []byte) {
	dir, err := CacheDir()
	if err != nil || os.MkdirAll(dir, 0o755) != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, key+".*.tmp")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return
	}
	os.Rename(tmp.Name(), filepath.Join(dir, key+ext))
}

var sharedDecl = regexp.MustCompile(`\.shared\s+\.align\s+\d+\s+\.b8\s+[\w$]+\[(\d+)\]`)

// StaticSharedBytes adds up the statically sized __shared__ arrays declared in PTX: the one number
// of the compile report that is known without a GPU (registers need the driver's JIT).
func StaticSharedBytes(ptx string) int {
	total := 0
	for _, m := range sharedDecl.FindAllStringSubmatch(ptx, -1) {
		n, _ := strconv.Atoi(m[1])
		total += n
	}
	return total
}

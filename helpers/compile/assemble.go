package compile

import (
	"fmt"
	"strings"
)

// Assemble compiles src for the real architecture of opts.Arch (compute_80 becomes sm_80; sm_80 is
// taken as it is), so that NVRTC runs ptxas, which rejects what that architecture lacks (cp.async
// below sm_80, clusters below sm_90) with no GPU. A compute_XX compile (PTX) lets inline assembly
// through unchecked until the driver's JIT on the reader's GPU. Like PTX, it refuses a source below
// the compute capability the source declares (a *NeedError). It returns NVRTC's log, and a *Error
// with it when the source does not build. Nothing is cached: this is a check, not a build.
func Assemble(src Source, opts Options) (log string, err error) {
	if opts.Arch == "" {
		opts.Arch = DefaultArch
	}
	opts.Arch = "compute_" + strings.TrimPrefix(strings.TrimPrefix(opts.Arch, "sm_"), "compute_")
	flags, err := Flags(opts)
	if err != nil {
		return "", fmt.Errorf("assembling %s: %w", src.Name, err)
	}
	if err := CheckArch(opts.Arch); err != nil {
		return "", fmt.Errorf("assembling %s: %w", src.Name, err)
	}
	if err := Fits(src, opts); err != nil {
		return "", err
	}
	flags[0] = "--gpu-architecture=sm_" + strings.TrimPrefix(opts.Arch, "compute_")
	nvrtcMu.Lock()
	_, log, err = run(src, flags, false)
	nvrtcMu.Unlock()
	return strings.TrimSpace(log), err
}

package compile

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Need is what a kernel source says, in its header comment, that it needs of the GPU:
//
//	// Needs: compute capability 8.0 (cp.async and mma.sync with TF32).
//	// Needs: compute capability 8.0 with USE_BF16 (bfloat16 arithmetic).
//	// Needs: compute capability 9.0a (wgmma: Hopper only).
//
// The second form applies only when the source is compiled with that define. The third, with the
// "a" suffix, is an architecture-specific need: the source must be compiled for exactly that
// architecture's "a" target (compute_90a), which no other GPU runs, newer ones included. PTX and Assemble
// refuse to compile a source for an architecture below what it needs, before NVRTC runs, with a
// *NeedError that names the need; a reader's edited copy of a step keeps the line and the refusal.
type Need struct {
	CC   int    // compute capability times ten: 80 for 8.0
	Why  string // what the source uses that needs it
	With string // the define that brings the need in; "" for the whole source
	// Exact is an architecture-specific need (9.0a): that compute capability and no other, compiled
	// for its "a" target.
	Exact bool
}

// CapabilityName writes a compute capability times ten as "8.0".
func CapabilityName(cc int) string { return fmt.Sprintf("%d.%d", cc/10, cc%10) }

// String is the need as a reader reads it: "compute capability 8.0 (cp.async and mma.sync)".
func (n Need) String() string {
	if n.CC == 0 {
		return "any GPU"
	}
	if n.Exact {
		return fmt.Sprintf("compute capability %s exactly, compiled for compute_%da (%s)", CapabilityName(n.CC), n.CC, n.Why)
	}
	return fmt.Sprintf("compute capability %s (%s)", CapabilityName(n.CC), n.Why)
}

var needLine = regexp.MustCompile(`(?m)^\s*//\s*Needs: compute capability (\d+)\.(\d)(a?)(?: with ([A-Za-z_][A-Za-z0-9_]*))? \((.+)\)\.?\s*$`)

// Needs lists every need a source declares, whether or not its define is set.
func Needs(code string) []Need {
	var out []Need
	for _, m := range needLine.FindAllStringSubmatch(code, -1) {
		maj, _ := strconv.Atoi(m[1])
		min, _ := strconv.Atoi(m[2])
		out = append(out, Need{CC: 10*maj + min, Exact: m[3] == "a", With: m[4], Why: m[5]})
	}
	return out
}

// Required is the highest need of a source compiled with defines (each "NAME" or "NAME=VALUE"):
// the zero Need when it declares none that applies.
func Required(code string, defines []string) Need {
	names := make([]string, len(defines))
	for i, d := range defines {
		names[i], _, _ = strings.Cut(d, "=")
	}
	var best Need
	for _, n := range Needs(code) {
		if n.With != "" && !slices.Contains(names, n.With) {
			continue
		}
		if n.CC > best.CC || n.CC == best.CC && n.Exact {
			best = n
		}
	}
	return best
}

// ArchCC is the compute capability times ten of an architecture name: 75 for compute_75 or sm_75,
// 90 for compute_90a. It is 0 for a name it cannot read.
func ArchCC(arch string) int {
	s := strings.TrimPrefix(strings.TrimPrefix(arch, "compute_"), "sm_")
	cc, err := strconv.Atoi(strings.TrimRight(s, "abf"))
	if err != nil {
		return 0
	}
	return cc
}

// NeedError is a source refused for an architecture below the compute capability it declares.
type NeedError struct {
	Name string // the source
	Need Need
	Arch string // what it was to be compiled for
}

func (e *NeedError) Error() string {
	return fmt.Sprintf("%s needs %s; it is not compiled for %s (compute capability %s)", e.Name, e.Need, e.Arch, CapabilityName(ArchCC(e.Arch)))
}

// Fits returns a *NeedError when src, built with opts, needs more than opts.Arch has; nil otherwise.
func Fits(src Source, opts Options) error {
	arch := opts.Arch
	if arch == "" {
		arch = DefaultArch
	}
	need := Required(src.Code, opts.Defines)
	cc := ArchCC(arch)
	if need.CC > 0 && cc > 0 && (cc < need.CC || need.Exact && (cc != need.CC || !strings.HasSuffix(arch, "a"))) {
		return &NeedError{Name: src.Name, Need: need, Arch: arch}
	}
	return nil
}

// IsNeed reports whether err is (or wraps) a *NeedError, and returns it.
func IsNeed(err error) (*NeedError, bool) {
	var ne *NeedError
	ok := errors.As(err, &ne)
	return ne, ok
}

package lessons

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
)

// build is one way a kernel source is compiled: its file and defines.
type build struct {
	dir     compile.Files
	file    string
	defines []string
}

// builds lists every kernel file of every lesson once without defines, and once with each set of
// defines a step of its lesson compiles it with.
func builds(t *testing.T) []build {
	t.Helper()
	var out []build
	for _, l := range All() {
		dir, ok := KernelFolder(l.ID)
		if !ok {
			t.Fatalf("lesson %s: no kernel folder in this test's list", l.ID)
		}
		for _, f := range dir.List() {
			if !strings.HasSuffix(f, ".cu") {
				continue
			}
			sets := [][]string{nil}
			for _, p := range gpu.Profiles {
				for _, c := range l.StepsOn(p.Device()) {
					if c.File == f && len(c.Defines) > 0 && !slices.ContainsFunc(sets, func(d []string) bool { return slices.Equal(d, c.Defines) }) {
						sets = append(sets, c.Defines)
					}
				}
			}
			for _, d := range sets {
				out = append(out, build{dir, f, d})
			}
		}
	}
	return out
}

// realArchs are the real architectures to assemble for: the compute capabilities of the GPU
// profiles (7.5 to 12.0) that the loaded NVRTC supports. In -short mode, for each build, only its
// need, the one below it and the newest are tried.
func realArchs(t *testing.T) []int {
	t.Helper()
	supported, err := compile.SupportedArchs()
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, p := range gpu.Profiles {
		if cc := p.CC(); slices.Contains(supported, cc) && !slices.Contains(out, cc) {
			out = append(out, cc)
		}
	}
	slices.Sort(out)
	return out
}

// Every kernel source builds, with ptxas, for every real architecture from the compute capability
// it declares up (a real-architecture compile rejects what an architecture lacks: cp.async below
// sm_80, clusters below sm_90), and below it is refused before NVRTC runs, with the need named.
// With NVRTC 11.8 (CI) that is sm_75 to sm_90; with NVRTC 13 Blackwell's sm_100 and sm_120 too. A
// source whose need is architecture-specific (9.0a) builds for sm_90a alone, and every other
// architecture refuses it (NVRTC 11.8 has no "a" targets: there it is only refused).
func TestEveryKernelBuildsFromItsNeedUp(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	archs := realArchs(t)
	version, _ := compile.Version()
	t.Logf("NVRTC %s, real architectures %v", version, archs)
	for _, b := range builds(t) {
		src, err := b.dir.Source(b.file)
		if err != nil {
			t.Fatal(err)
		}
		need := compile.Required(src.Code, b.defines)
		name := b.dir.Pkg + "/" + b.file
		if len(b.defines) > 0 {
			name += " " + strings.Join(b.defines, " ")
		}
		for _, cc := range pick(archs, need.CC, testing.Short()) {
			arch := "sm_" + strconv.Itoa(cc)
			if need.Exact && cc == need.CC {
				arch += "a" // an architecture-specific source builds for its "a" target only
			}
			_, err := compile.Assemble(src, compile.Options{Arch: arch, Defines: b.defines})
			if need.Exact && cc == need.CC && err != nil && strings.Contains(err.Error(), "came with CUDA 12.0") {
				t.Logf("%s: not built for %s: %v", name, arch, err)
				continue
			}
			if cc < need.CC || need.Exact && cc != need.CC {
				ne, ok := compile.IsNeed(err)
				if !ok || !strings.Contains(err.Error(), need.String()) {
					t.Errorf("%s for %s (below its need, %s): want a refusal naming the need, got %v", name, arch, need, err)
				} else if ne.Need.CC != need.CC {
					t.Errorf("%s: refused for %s at the wrong need %v", name, arch, ne.Need)
				}
				continue
			}
			if err != nil {
				msg := err.Error()
				if i := strings.Index(msg, "\n\n"); i > 0 {
					msg = msg[:i]
				}
				t.Errorf("%s does not build for %s although it declares %s: fix it or declare its need (// Needs: compute capability X.Y (why).)\n%s", name, arch, need, msg)
			}
		}
	}
}

// pick is every architecture, or in short mode the lowest that meets need, the highest below it
// and the newest.
func pick(archs []int, need int, short bool) []int {
	if !short {
		return archs
	}
	var out []int
	for i, cc := range archs {
		first := cc >= need && (i == 0 || archs[i-1] < need)
		below := cc < need && (i+1 == len(archs) || archs[i+1] >= need)
		if first || below || i == len(archs)-1 {
			out = append(out, cc)
		}
	}
	return out
}

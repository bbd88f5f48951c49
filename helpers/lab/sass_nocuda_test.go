//go:build nocuda

package lab

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// In the no-GPU mode the SASS is the recorded GPU's architecture's, labelled so; Try shows the SASS
// of the reader's code, not the original's.
func TestSASSInTheNoGPUMode(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	env, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	var out bytes.Buffer
	old := show.Out
	show.Out = &out
	defer func() { show.Out = old }()
	src := compile.Source{Name: "k.cu", Code: "extern \"C\" __global__ void k(float4 *x) {\n  x[threadIdx.x] = x[threadIdx.x + 32];\n}\n"}
	l, err := env.SASS(src, compile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "sm_" + strings.TrimPrefix(env.Arch(), "compute_"); l.Arch != want {
		t.Errorf("SASS for %s, want the recorded GPU's %s", l.Arch, want)
	}
	env.ShowSASSCollapsed(src, compile.Options{})
	if s := out.String(); !strings.Contains(s, "for the recorded GPU") || !strings.Contains(s, "global loads, 128-bit") {
		t.Errorf("collapsed SASS output:\n%s", s)
	}
	out.Reset()
	mine := strings.Replace(src.Code, "x[threadIdx.x + 32]", "x[threadIdx.x + 64]", 1)
	tr := Trial{Step: "k", Lesson: "none",
		Compile: func(code string) ([]record.KernelReport, error) {
			s := src
			if code != "" {
				s.Code = code
			}
			p, err := env.Build(s, "k")
			if err != nil {
				return nil, err
			}
			return []record.KernelReport{p.Report("k", 32, 0)}, nil
		}}
	if err := env.Try(tr, mine); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Count(s, "--- SASS of k.cu") != 1 {
		t.Errorf("Try should show the SASS of the code it compiled once:\n%s", s)
	}
}

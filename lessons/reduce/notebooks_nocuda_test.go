//go:build nocuda

package reduce

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"

	"github.com/cudalessons/cudalessons/helpers/lab"
)

// The cells that differ between the two notebooks work without a GPU: each notebook's floors and
// compile list name its own problem, its Walk shows the step's SASS, its targets are its own
// section's, and the profile's readings cite the recorded profile with its GPU.
func TestEachNotebooksOwnCells(t *testing.T) {
	env := labtest.OpenFresh(t)
	if env.GPU() {
		t.Skip("a GPU answered")
	}
	out := labtest.CaptureShow(t)
	cell := func(name string, f func() error, want, not []string) {
		t.Helper()
		out.Reset()
		if err := f(); err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		for _, w := range want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s does not say %q:\n%.2000s", name, w, out.String())
			}
		}
		for _, n := range not {
			if strings.Contains(out.String(), n) {
				t.Errorf("%s says %q", name, n)
			}
		}
	}
	cell("the softmax floors", func() error { return IntroSoftmax(env) }, []string{"softmax (4096, 65536)"}, []string{"layer norm"})
	cell("the layer norm floors", func() error { return IntroLayerNorm(env) }, []string{"layer norm (16, 64, 256, 256)"}, []string{"softmax ("})
	cell("the softmax compile list", func() error { return CompileSoftmax(env) }, []string{"s5_cluster.cu"}, []string{"l3_welford.cu"})
	cell("the layer norm compile list", func() error { return CompileLayerNorm(env) }, []string{"l3_welford.cu"}, []string{"s5_cluster.cu"})
	cell("a softmax walk", func() error { return WalkSoftmax(env, stepCluster) }, []string{"SASS of s5_cluster.cu"}, nil)
	cell("a layer norm walk", func() error { return WalkLayerNorm(env, stepLN4) }, []string{"SASS of l4_fused.cu"}, nil)
	cell("the softmax targets", func() error { return ShowSectionTargets(env, SecSoftmax, false) }, []string{"an all-zero softmax"}, []string{"mean 1000"})
	cell("the layer norm targets", func() error { return ShowSectionTargets(env, SecLayerNorm, false) }, []string{"mean 1000"}, []string{"an all-zero softmax"})
	rec := lab.RecordedFigures(ID)
	if rec.Profiles == nil {
		t.Fatal("no recorded profile of the lesson")
	}
	cell("the profile's readings", func() error { return ShowProfileReadings(env) }, []string{rec.Profiles.Receipt.GPU, "x is read from DRAM once"}, []string{"not in this run"})
	if err := ShowSectionTargets(env, "conv", false); err == nil || !strings.Contains(err.Error(), "conv") {
		t.Errorf("an unknown section: %v", err)
	}
}

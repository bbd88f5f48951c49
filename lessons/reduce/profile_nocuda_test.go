//go:build nocuda

package reduce

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"

	kr "github.com/cudalessons/cudalessons/kernels/reduce"
)

// Without a GPU, the Profile cell of the cluster step compiles the step (and a reader's copy of
// it), says what profiling needs and shows the recorded profile with its distributed shared
// memory traffic; a step that does not exist is an error naming it.
func TestProfileCellWithoutAGPU(t *testing.T) {
	env := labtest.OpenFresh(t)
	out := labtest.CaptureShow(t)
	if err := Profile(env, stepCluster, ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"compiled. Profiling it needs a GPU", "The recorded profile of the original " + stepCluster, "dshared"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the cell does not say %q:\n%.3000s", want, out.String())
		}
	}
	src, err := kr.Source("s5_cluster.cu")
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := Profile(env, stepCluster, "// my copy of the cluster step\n"+src.Code); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Your "+stepCluster+" compiled. Profiling it needs a GPU") {
		t.Errorf("the cell says:\n%.2000s", out.String())
	}
	if err := Profile(env, "12 no such step", ""); err == nil || !strings.Contains(err.Error(), "12 no such step") {
		t.Errorf("an unknown step: %v", err)
	}
}

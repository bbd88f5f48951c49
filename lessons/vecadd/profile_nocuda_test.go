//go:build nocuda

package vecadd

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// Without a GPU, a Profile cell compiles the reader's float4 and says what profiling needs; a step
// that does not exist is an error naming it.
func TestProfileCellWithoutAGPU(t *testing.T) {
	env := labtest.OpenFresh(t)
	out := labtest.CaptureShow(t)
	code, err := readersFloat4()
	if err != nil {
		t.Fatal(err)
	}
	if err := Profile(env, "float4", code); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Your float4 compiled. Profiling it needs a GPU") {
		t.Errorf("the cell says:\n%s", out.String())
	}
	if err := Profile(env, "float5", ""); err == nil || !strings.Contains(err.Error(), "float5") {
		t.Errorf("an unknown step: %v", err)
	}
}

//go:build nocuda

package matmul

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// Without a GPU, a Profile cell compiles the step, says what profiling needs and shows the recorded
// profile of the step under the short name the recorded profiles use ("6"); a reader's edit is
// compiled as theirs; a step that does not exist is an error naming it.
func TestProfileCellWithoutAGPU(t *testing.T) {
	env := labtest.OpenFresh(t)
	out := labtest.CaptureShow(t)
	for _, step := range []string{"6", "7 warp tile", "8"} {
		out.Reset()
		if err := Profile(env, step, ""); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		short, _, _ := strings.Cut(step, " ")
		for _, want := range []string{"The original " + short + " compiled. Profiling it needs a GPU", "The recorded profile of the original " + short + ":"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: the cell does not say %q:\n%.2000s", step, want, out.String())
			}
		}
	}
	st, err := StepByName("6")
	if err != nil {
		t.Fatal(err)
	}
	src, err := st.Source("")
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := Profile(env, "6", "// my copy of step 6\n"+src.Code); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Your 6 compiled. Profiling it needs a GPU") {
		t.Errorf("a reader's edit: the cell says:\n%.2000s", out.String())
	}
	if err := Profile(env, "10", ""); err == nil || !strings.Contains(err.Error(), `"10"`) {
		t.Errorf("an unknown step: %v", err)
	}
	for name, want := range map[string]string{"6 vectorized": "6", "8b 3xTF32 split": "8b", "9 bf16x3 split": "9 bf16x3 split", "7b any shape": "7b"} {
		st, err := StepByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := shortName(st); got != want {
			t.Errorf("shortName(%q) = %q, want %q", name, got, want)
		}
	}
}

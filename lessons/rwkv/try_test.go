package rwkv

import (
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

// Every forward and backward step (and the general ones) can be tried: its own file passes through
// Try (compiled, and on a GPU checked and timed beside itself), a broken edit is a compile error, an
// unknown step is refused. On a GPU a kernel that skips the last output fails its check.
func TestTryEveryStep(t *testing.T) {
	env := labtest.OpenFresh(t)
	var names []string
	for _, st := range append(append([]Step{}, Steps...), GeneralStep) {
		names = append(names, st.Name)
	}
	for _, st := range append(append([]BackwardStep{}, BackwardSteps...), GeneralBackward) {
		names = append(names, st.Name)
	}
	for _, name := range names {
		tr, err := Trial(env, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := tr.Compile("not CUDA"); err == nil {
			t.Errorf("%s: a broken kernel compiled", name)
		} else if _, ok := err.(*compile.Error); !ok {
			t.Errorf("%s: a broken kernel gave %T, want a compile error", name, err)
		}
		tr.Close()
		if env.GPU() && !strings.Contains(name, "v3") && !strings.Contains(name, "general") {
			continue // on a GPU one forward and one backward step are enough to time here
		}
		st, _ := StepByName(name)
		file := st.File
		if strings.HasPrefix(name, "bwd") {
			bst, _ := BackwardStepByName(name)
			file = bst.File
		}
		if name == GeneralStep.Name || name == GeneralBackward.Name {
			file = GeneralStep.File
		}
		src, err := GeneralStep.Source("")
		if file != GeneralStep.File {
			src, err = Step{File: file}.Source("")
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := Try(env, name, "// my copy\n"+src.Code); err != nil { // an edit: the reader's path
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Trial(env, "v99"); err == nil {
		t.Error("an unknown step was tried")
	}
	if !env.GPU() {
		return
	}
	src, _ := Step{File: "1_shared.cu"}.Source("")
	wrong := strings.Replace(src.Code, "if (t >= T) return;", "if (t >= T - 1) return;", 1)
	if wrong == src.Code {
		t.Fatal("could not break v1")
	}
	tr, _ := Trial(env, "v1 shared")
	defer tr.Close()
	if _, err := tr.Measure(wrong); err == nil {
		t.Error("a kernel that leaves the last output unwritten passed its check")
	}
}

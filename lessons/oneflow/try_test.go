package oneflow

import (
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
	ko "github.com/cudalessons/cudalessons/kernels/oneflow"
)

// Every step of the lesson can be tried: its own file passes through Try unchanged (compiled, and
// on a GPU checked and timed beside itself), a broken edit is a compile error, an unknown step is
// refused with the list of steps. On a GPU a kernel that leaves an output unwritten fails its check.
func TestTryEveryStep(t *testing.T) {
	env := labtest.OpenFresh(t)
	steps := map[string]string{"naive": "1_naive.cu", "packed": "2_packed.cu", "in flight": "3_inflight.cu", "generic": "u_1_generic.cu", "pack2x": "u_2_pack2x.cu"}
	for _, s := range AtomicSteps {
		if s.Name != AtomicSteps[0].Name || !env.GPU() { // the half atomic step takes about 1 s a try on a GPU
			steps[s.Name] = s.File
		}
	}
	for name, file := range steps {
		src, err := ko.Source(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := Try(env, name, "// my copy\n"+src.Code); err != nil { // an edit: the reader's path
			t.Errorf("%s: %v", name, err)
		}
		tr, err := Trial(env, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Compile("not CUDA"); err == nil {
			t.Errorf("%s: a broken kernel compiled", name)
		} else if _, ok := err.(*compile.Error); !ok {
			t.Errorf("%s: a broken kernel gave %T, want a compile error", name, err)
		}
		tr.Close()
	}
	if _, err := Trial(env, "nope"); err == nil || !strings.Contains(err.Error(), "pack2x") {
		t.Errorf("unknown step: %v", err)
	}
	if !env.GPU() {
		return
	}
	// A packed kernel that skips the scalar tail passes on sizes that are a multiple of the pack,
	// so the wrong kernel here skips the last pack instead.
	src, _ := ko.Source("2_packed.cu")
	wrong := strings.Replace(src.Code, "i < packs; i += stride", "i < packs - 1; i += stride", 1)
	if wrong == src.Code {
		t.Fatal("could not break the packed kernel")
	}
	tr, _ := Trial(env, "packed")
	defer tr.Close()
	if _, err := tr.Measure(wrong); err == nil {
		t.Error("a kernel that leaves the last pack unwritten passed its check")
	}
}

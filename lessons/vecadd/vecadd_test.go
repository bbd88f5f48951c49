package vecadd

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
	kv "github.com/cudalessons/cudalessons/kernels/vecadd"
)

func TestEveryStepCompiles(t *testing.T) {
	for _, arch := range []string{"compute_80", "compute_90"} {
		for _, s := range Steps {
			src, err := kv.Source(s.File)
			if err != nil {
				t.Fatal(err)
			}
			res, err := compile.PTX(src, compile.Options{Arch: arch})
			if err != nil {
				t.Fatalf("%s for %s: %v", s.File, arch, err)
			}
			if !strings.Contains(res.PTX, ".entry "+s.Kernel) {
				t.Errorf("%s: no entry %s in the PTX", s.File, s.Kernel)
			}
		}
	}
}

func TestReferenceAndValidation(t *testing.T) {
	a, b := Inputs(1000, 7)
	a2, _ := Inputs(1000, 7)
	if a[10] != a2[10] {
		t.Error("inputs are not reproducible from the seed")
	}
	c := Reference(a, b)
	if c[3] != float64(a[3])+float64(b[3]) {
		t.Error("reference is not a + b")
	}
	naive, _ := StepByName("naive")
	if err := naive.Validate(1 << 32); err == nil || !strings.Contains(err.Error(), "2147483647") {
		t.Errorf("naive at 2^32 elements: %v", err)
	}
	if err := naive.Validate(-1); err == nil {
		t.Error("a negative n was accepted")
	}
	if _, err := StepByName("float8"); err == nil {
		t.Error("an unknown step was found")
	}
}

package hopper

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"github.com/cudalessons/cudalessons/lessons/matmul"
)

// Multiply's choice on an H100, without a GPU: the split on every hostile product whose rows and
// columns fit fp16's window once moved, lesson 03's choice (3xTF32, or a float32 step) for the
// others and below the threshold, each with its reason.
func TestMultiplyChoice(t *testing.T) {
	d := labtest.ProfileDevice(t, "h100-sxm")
	s := matmul.Shape{M: 256, N: 384, K: 160}
	for _, h := range matmul.HostileInputs(s, 13) {
		name, why, row, _ := Multiplier{MinMACs: 0}.Choose(s, d, h.A, h.B)
		want := Split.Name
		switch h.Takes {
		case "3xtf32":
			want = Lesson03Prefix + "8b 3xTF32 split"
		case "float32":
			want = Lesson03Prefix + "7 warp tile"
		}
		if name != want || (row != nil) != (want == Split.Name) || why == "" {
			t.Errorf("%s: %s (%s), want %s", h.Name, name, why, want)
		}
	}
	a, b := matmul.Inputs(s, 1)
	if name, why, _, _ := (Multiplier{MinMACs: SplitMinMACs}).Choose(s, d, a, b); !strings.HasPrefix(name, Lesson03Prefix) || !strings.Contains(why, "threshold") {
		t.Errorf("below SplitMinMACs: %s (%s)", name, why)
	}
}

//go:build !nocuda

package rwkv

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// Under the T4's limits the run measures every step the T4 runs and records the others as refused:
// exactly the refused steps of StepChecks, one refused record each, and no time for any of them.
func TestRunOnT4Limits(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole quick run")
	}
	env, run := labtest.RunEmulated(t, Lesson, "t4")
	refused := Lesson.RefusedOn(env.Device())
	if len(refused) == 0 {
		t.Fatal("the T4 refuses nothing")
	}
	for _, r := range run.Records { // stricter: no record at all of a refused step but its refused one
		if _, ok := refused[r.Variant]; ok && r.Kind != "refused" {
			t.Errorf("%s %s is refused on a T4 but has a record (median %v)", r.Case, r.Variant, r.MedianMS)
		}
	}
	// The op still takes the article's shape, with the steps the T4 runs.
	op, c, err := NewOp(env, ArticleShape, FP32)
	if err != nil {
		t.Fatal(err)
	}
	op.Free()
	if _, no := refused[c.Fwd.Name]; no {
		t.Errorf("the op picks refused %s", c.Fwd.Name)
	}
}

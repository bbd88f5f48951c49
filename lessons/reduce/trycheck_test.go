package reduce

import (
	"errors"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/results"
)

// A Try's checks on the awkward shapes make one table: the shapes a step's plan refuses (for step 3,
// all but one) are rows with one footnoted reason, not a line each.
func TestTryChecksAreOneTablePerStep(t *testing.T) {
	rec, err := record.LoadFS(results.FS, lab.RecordedDevice)
	if err != nil {
		t.Fatal(err)
	}
	s := SoftmaxSteps[2] // 3 warp shuffles + float4: float4 loads, refuses every shape but one
	checks := lab.ShapeChecks{Title: s.Name}
	for _, sh := range trySoftmaxShapes {
		_, err := PlanSoftmax(s, SoftmaxInput{DType: s.DTypes[0], Rows: sh[0], Cols: sh[1], Aligned: sh[2] == 0, SameOffset: sh[2] == 0, Device: rec.Receipt.Device})
		var res check.Result
		if err == nil { // the shape the step takes: a right answer, as a GPU would give it
			want := []float64{0.25, 0.5, 0.25}
			res = check.Compare([]float64{0.25, 0.5 * (1 + 1e-7), 0.25}, want, check.FP32)
		}
		wrong, lerr := addTryCheck(&checks, shape(sh[0], sh[1]), sh[2] > 0, res, err)
		if wrong || lerr != nil {
			t.Fatalf("%v: wrong %v, %v", sh, wrong, lerr)
		}
	}
	tab := checks.Table()
	if len(tab.Rows) != len(trySoftmaxShapes) {
		t.Fatalf("%d rows for %d shapes:\n%s", len(tab.Rows), len(trySoftmaxShapes), tab.Text())
	}
	refused := 0
	for _, r := range tab.Rows {
		switch r[1] {
		case "refused":
			refused++
		case "pass":
			if !strings.HasPrefix(r[2], "rel L2 ") || strings.Contains(r[2], "PASS") {
				t.Errorf("pass cell %q: want the check's figure without the verdict", r[2])
			}
		default:
			t.Errorf("row %q", r)
		}
	}
	if refused != 7 || strings.Count(tab.Caption, "[") != 1 || !strings.Contains(tab.Caption, "[1] softmax step 3 loads float4s: it needs cols % 4 == 0 and 16-byte aligned x and y") {
		t.Errorf("%d refused; want 7 sharing one reason:\n%s", refused, tab.Text())
	}
	if !strings.Contains(tab.Rows[3][0], "misaligned view") {
		t.Errorf("the misaligned shape is not named: %q", tab.Rows[3])
	}
	// A wrong result stops the checks; a failure of the lab is an error naming the shape.
	bad := check.Compare([]float64{1, 0, 0}, []float64{0.25, 0.5, 0.25}, check.FP32)
	if wrong, err := addTryCheck(&checks, "(3, 5)", false, bad, nil); !wrong || err != nil {
		t.Errorf("a wrong result: wrong %v, %v", wrong, err)
	}
	if _, err := addTryCheck(&checks, "(3, 5)", false, check.Result{}, errors.New("out of memory")); err == nil || !strings.Contains(err.Error(), "(3, 5): out of memory") {
		t.Errorf("a failure of the lab: %v", err)
	}
}

package reduce

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// A Try's checks on its small shapes are one table, a row per shape: passes and refusals go on to
// the next shape; a wrong result shows the table with a warning and stops (nothing is timed); a
// failure of the lab itself is an error naming the shape, after the table so far.
func TestTryChecksTable(t *testing.T) {
	var out bytes.Buffer
	old := show.Out
	show.Out = &out
	defer func() { show.Out = old }()
	right := check.Result{N: 5, RelL2: 1e-8, Tol: check.FP32, OK: true}
	wrongRes := check.Result{N: 5, RelL2: 1, Bad: 5, Tol: check.FP32}
	c := newTryChecks("4 online")
	if wrong, err := c.add("(1, 1)", false, right, nil); wrong || err != nil {
		t.Fatalf("a pass: %v %v", wrong, err)
	}
	if wrong, err := c.add("(4, 128)", true, check.Result{}, &Refusal{errors.New("the float4 step needs 16-byte aligned rows")}); wrong || err != nil {
		t.Fatalf("a refusal: %v %v", wrong, err)
	}
	if out.Len() != 0 {
		t.Errorf("rows were shown one by one:\n%s", out.String())
	}
	c.show()
	for _, want := range []string{"4 online: checked on small awkward shapes", "(1, 1)", "pass", "(4, 128) misaligned view", "refused before launch", "16-byte aligned"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if wrong, err := c.add("(5, 37)", false, wrongRes, nil); !wrong || err != nil {
		t.Errorf("a wrong result: %v %v", wrong, err)
	}
	if s := out.String(); !strings.Contains(s, "WRONG") || !strings.Contains(s, "(5, 37)") {
		t.Errorf("the wrong result is not shown:\n%s", s)
	}
	if _, err := c.add("(7, 1000)", false, check.Result{}, errors.New("out of memory")); err == nil || !strings.Contains(err.Error(), "(7, 1000)") {
		t.Errorf("a failure of the lab: %v", err)
	}
}

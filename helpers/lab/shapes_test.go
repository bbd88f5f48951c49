package lab

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestShapeChecksOneRowPerShapeReasonsOnce(t *testing.T) {
	c := ShapeChecks{Title: "3 warp shuffles + float4: awkward shapes"}
	need := func(cols int, aligned bool) error { // as the plan of softmax step 3 words it
		return fmt.Errorf("softmax step 3 loads float4s: it needs cols %% 4 == 0 (cols = %d) and 16-byte aligned x and y (aligned: %t); step 4 takes any shape", cols, aligned)
	}
	c.Refuse("(1, 1)", need(1, true))
	c.Refuse("(3, 5)", need(5, true))
	c.Pass("(7, 1000)", "rel L2 1.2e-07, max abs 3.0e-08 (fp32: rel L2 <= 1e-05)")
	c.Refuse("(2, 300001) misaligned view", errors.New("softmax step 1 adds a row in sequence in one thread: cols = 300001 is over its limit of 65536 (float32 rounding of a longer sequential sum passes the 1e-5 bound); step 2 adds in a tree"))
	c.Wrong("(2, 4099)", "FAIL rel L2 1.0e+00")
	tab := c.Table()
	if len(tab.Rows) != 5 {
		t.Fatalf("%d rows, want one per shape:\n%s", len(tab.Rows), tab.Text())
	}
	want := [][2]string{{"refused", "before launch: reason [1]"}, {"refused", "before launch: reason [1]"}, {"pass", "rel L2 1.2e-07"}, {"refused", "before launch: reason [2]"}, {"WRONG", "FAIL"}}
	for i, w := range want {
		if tab.Rows[i][1] != w[0] || !strings.HasPrefix(tab.Rows[i][2], w[1]) {
			t.Errorf("row %d: %q, want %q", i, tab.Rows[i], w)
		}
	}
	for _, w := range []string{
		"5 shape(s): 1 passed, 3 refused by the step's plan before any launch, 1 wrong.",
		"[1] softmax step 3 loads float4s: it needs cols % 4 == 0 and 16-byte aligned x and y; step 4 takes any shape;",
		"[2] softmax step 1 adds a row in sequence in one thread: cols = 300001 is over its limit of 65536 (float32 rounding of a longer sequential sum passes the 1e-5 bound); step 2 adds in a tree.",
	} {
		if !strings.Contains(tab.Caption, w) {
			t.Errorf("caption lacks %q:\n%s", w, tab.Caption)
		}
	}
}

//go:build !nocuda

package reduce

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// Walk's checks of a step on the awkward shapes are one table: for step 3 (float4 loads) seven
// shapes refused for one footnoted reason and one checked, not a line per shape.
func TestWalkChecksAreOneTable(t *testing.T) {
	if testing.Short() {
		t.Skip("times at the article's shape")
	}
	env := labtest.Open(t)
	out := labtest.CaptureShow(t)
	if err := TrySoftmax(env, SoftmaxSteps[2].Name, ""); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{SoftmaxSteps[2].Name + " on awkward shapes (every element checked)", "8 shape(s): 1 passed, 7 refused by the step's plan before any launch, 0 wrong.", "[1] softmax step 3 loads float4s"} {
		if !strings.Contains(s, want) {
			t.Errorf("Walk's checks lack %q:\n%s", want, s)
		}
	}
	if strings.Count(s, "before launch: reason [1]") != 7 || strings.Contains(s, "[2]") || strings.Contains(s, "refused before launch:") {
		t.Errorf("want seven refused rows sharing one reason, and no line per shape:\n%s", s)
	}
}

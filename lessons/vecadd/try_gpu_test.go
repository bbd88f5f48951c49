//go:build !nocuda

package vecadd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"github.com/cudalessons/cudalessons/helpers/show"
	kv "github.com/cudalessons/cudalessons/kernels/vecadd"
)

// On a GPU, a Try of the step's unchanged source checks and times the step alone and invites an
// edit: no table of the step beside itself. An edit is timed beside the original in one table.
func TestTryComparesOnlyAnEdit(t *testing.T) {
	env := labtest.Open(t)
	src, err := kv.Source("1_naive.cu")
	if err != nil {
		t.Fatal(err)
	}
	try := func(code string) string {
		var out bytes.Buffer
		old := show.Out
		show.Out = &out
		defer func() { show.Out = old }()
		if err := Try(env, "naive", code); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	same := try(src.Code + "\n")
	if strings.Contains(same, "beside the original") || strings.Contains(same, "yours vs original") {
		t.Errorf("the unchanged source was compared with itself:\n%s", same)
	}
	if !strings.Contains(same, "the original naive") || !strings.Contains(same, "pass (rel L2") || !strings.Contains(same, lab.InviteEdit("naive")) {
		t.Errorf("the unchanged source: want the step's checked time and the invitation:\n%s", same)
	}
	edited := try(strings.Replace(src.Code, "c[i] = a[i] + b[i];", "c[i] = b[i] + a[i];", 1))
	if !strings.Contains(edited, "Your naive beside the original") || !strings.Contains(edited, "yours vs original") || strings.Contains(edited, lab.InviteEdit("naive")) {
		t.Errorf("an edit: want the comparison table and no invitation:\n%s", edited)
	}
}

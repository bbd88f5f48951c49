//go:build nocuda

package vecadd

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"

	"github.com/cudalessons/cudalessons/helpers/lab"
	kv "github.com/cudalessons/cudalessons/kernels/vecadd"
)

// shown runs a cell's call in the no-GPU mode and returns what it showed.
func shown(t *testing.T, f func(env *lab.Env) error) string {
	t.Helper()
	env := labtest.OpenFresh(t)
	out := labtest.CaptureShow(t)
	if err := f(env); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// Walk shows the first step's source in full and each later step as its change from the step
// before, the full source below it.
func TestWalkShowsEachStepAsItsChange(t *testing.T) {
	first := shown(t, func(env *lab.Env) error { return Walk(env, "naive") })
	if !strings.Contains(first, "--- 1_naive.cu\n") || strings.Contains(first, "What changed") {
		t.Errorf("the first step is not shown in full, alone:\n%s", first)
	}
	second := shown(t, func(env *lab.Env) error { return Walk(env, "grid-stride") })
	for _, want := range []string{
		"What changed from step naive\n--- 1_naive.cu\n+++ 2_gridstride.cu\n@@ ",
		`-extern "C" __global__ void add_naive(const float *a, const float *b, float *c, int n) {`,
		`+extern "C" __global__ void add_gridstride(const float *a, const float *b, float *c, long long n) {`,
		"         c[i] = a[i] + b[i];\n",       // a context line
		"--- 2_gridstride.cu\n   1  // Step 2", // the full source, numbered
	} {
		if !strings.Contains(second, want) {
			t.Errorf("Walk of grid-stride lacks %q:\n%s", want, second)
		}
	}
}

// A Try of the step's own source, unchanged but for white space at the ends of lines, is the step
// as Walk shows it and a line inviting an edit; an edit is the reader's kernel, without that line.
func TestTryOfUnchangedCodeInvitesAnEdit(t *testing.T) {
	src, err := kv.Source("1_naive.cu")
	if err != nil {
		t.Fatal(err)
	}
	copied := "\n" + strings.ReplaceAll(src.Code, "\n", "  \n") + "\n\n"
	same := shown(t, func(env *lab.Env) error { return Try(env, "naive", copied) })
	for _, want := range []string{"compile report of the original naive", "recorded: the original naive", lab.InviteEdit("naive")} {
		if !strings.Contains(same, want) {
			t.Errorf("Try of the unchanged source lacks %q:\n%s", want, same)
		}
	}
	if strings.Contains(same, "Your naive") || strings.Contains(same, "your naive") {
		t.Errorf("Try of the unchanged source speaks of the reader's kernel:\n%s", same)
	}
	edited := shown(t, func(env *lab.Env) error {
		return Try(env, "naive", strings.Replace(src.Code, "c[i] = a[i] + b[i];", "c[i] = b[i] + a[i];", 1))
	})
	if !strings.Contains(edited, "compile report of your naive") || !strings.Contains(edited, "Your naive compiled. Checking and timing it needs a GPU") || strings.Contains(edited, lab.InviteEdit("naive")) {
		t.Errorf("Try of an edit:\n%s", edited)
	}
	empty := shown(t, func(env *lab.Env) error { return Try(env, "naive", "") })
	if strings.Contains(empty, lab.InviteEdit("naive")) {
		t.Errorf("Try of no code (a Walk) invites an edit:\n%s", empty)
	}
}

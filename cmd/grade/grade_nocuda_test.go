//go:build nocuda

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/grade"
	"github.com/cudalessons/cudalessons/helpers/lab"
)

func openNoGPU(t *testing.T) *lab.Env {
	t.Helper()
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	env, err := lab.Open()
	if err != nil {
		t.Fatal(err)
	}
	if env.GPU() {
		t.Skip("a GPU answered: the GPU tests grade")
	}
	t.Cleanup(func() { env.Close() })
	return env
}

// decidedWithoutGPU are the lessons whose every untouched starter fails already from its compile:
// its PTX shows that the task is not done. Other lessons' starters may need the GPU to fail.
var decidedWithoutGPU = map[string]bool{"01_rwkv": true, "02_oneflow": true}

// In the no-GPU mode the committed notebooks (untouched starters) fail with exit status 1, and the
// same notebooks with the solutions pasted in compile and pass all that is decided without a GPU.
func TestGradeWithoutGPU(t *testing.T) {
	env := openNoGPU(t)
	nbs := committed(t)
	code, out, rows := gradeAll(t, env, nbs...)
	if code != 1 || len(rows) == 0 {
		t.Fatalf("the untouched notebooks: exit %d, %d rows\n%s", code, len(rows), out)
	}
	for _, r := range rows {
		switch {
		case r.Verdict == grade.Failed:
		case r.Verdict == grade.NotRun && !decidedWithoutGPU[r.Lesson]:
			t.Logf("%s #%d: the untouched starter fails on the GPU only", r.Lesson, r.Exercise)
		default:
			t.Errorf("untouched starter %s #%d: %s: %s", r.Lesson, r.Exercise, r.Verdict, r.Reason)
		}
	}
	dir := t.TempDir()
	var solvedNBs []string
	for _, p := range nbs {
		solvedNBs = append(solvedNBs, solved(t, p, dir))
	}
	code, out, rows = gradeAll(t, env, dir) // a folder, as an instructor grades a class
	if code != 0 || len(rows) != exercises(nbs) {
		t.Fatalf("the solutions: exit %d, %d rows\n%s", code, len(rows), out)
	}
	for _, r := range rows {
		if r.Verdict != grade.NotRun || !strings.Contains(r.Reason, "needs a GPU") {
			t.Errorf("solution %s #%d: %s: %s", r.Lesson, r.Exercise, r.Verdict, r.Reason)
		}
	}
	if !strings.Contains(out, "No-GPU mode") || !strings.Contains(out, "need a GPU") {
		t.Errorf("the output does not say plainly that it graded without a GPU:\n%s", out)
	}
	t.Log("\n" + out)
}

// A notebook whose exercise cell was renamed, holds an interpreted string, or was deleted is
// graded "not graded" with a message that says which, and the exit status is 1.
func TestBrokenCells(t *testing.T) {
	env := openNoGPU(t)
	data, err := os.ReadFile(filepath.Join("..", "..", "notebooks", "01_rwkv.ipynb"))
	if err != nil {
		t.Fatal(err)
	}
	var nb map[string]any
	if err := json.Unmarshal(data, &nb); err != nil {
		t.Fatal(err)
	}
	cells := nb["cells"].([]any)
	var kept []any
	for _, c := range cells {
		cell := c.(map[string]any)
		src := ""
		for _, l := range cell["source"].([]any) {
			src += l.(string)
		}
		switch {
		case strings.Contains(src, "rwkv.Lesson, 1, myShared"):
			src = strings.Replace(src, "rwkv.Lesson, 1, myShared", "rwkv.Lesson, 1, mySharedV2", 1)
		case strings.Contains(src, "rwkv.Lesson, 2, myPairs"):
			continue // the student deleted exercise 2's cell
		}
		cell["source"] = src // nbformat allows one string
		kept = append(kept, cell)
	}
	// An extra cell with an interpreted string, for exercise 1 again.
	kept = append(kept, map[string]any{"cell_type": "code", "metadata": map[string]any{}, "outputs": []any{},
		"source": "var again = \"extern \\\"C\\\" __global__ void ex1_shared() {}\"\n%%\nlab.Cell(func(env *lab.Env) error { return env.Exercise(rwkv.Lesson, 1, again) })\n"})
	nb["cells"] = kept
	out, _ := json.Marshal(nb)
	p := filepath.Join(t.TempDir(), "student_01_rwkv.ipynb")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	code, text, rows := gradeAll(t, env, p)
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, text)
	}
	want := []string{"no cell declares mySharedV2 (was the variable renamed?)",
		"interpreted string",
		"no cell calls env.Exercise(rwkv.Lesson, 2, ...)"}
	for _, w := range want {
		hit := false
		for _, r := range rows {
			hit = hit || (r.Verdict == grade.Ungraded && strings.Contains(r.Reason, w))
		}
		if !hit {
			t.Errorf("no row says %q:\n%s", w, text)
		}
	}
}

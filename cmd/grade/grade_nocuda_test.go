//go:build nocuda

package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
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
		if r.Verdict != grade.NotRun || r.Reason == "" {
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

// class is a fake class of students, as -students finds it: each student's notebook folder.
func class(t *testing.T, names ...string) (root string, folders []grade.Folder) {
	t.Helper()
	root = t.TempDir()
	for _, n := range names {
		folders = append(folders, grade.Folder{Student: n, Dir: filepath.Join(root, n, "cudalessons")})
	}
	return root, folders
}

// copyInto copies a file into dir, made if missing.
func copyInto(t *testing.T, path, dir string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(path)), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// gradeClass runs the command's own code path on j and returns its exit status, its output, and
// the gradebook's CSV records and Markdown.
func gradeClass(t *testing.T, env *lab.Env, j job) (code int, out string, records [][]string, md string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code = run(env, j, &stdout, &stderr)
	out = stdout.String() + stderr.String()
	c, err := os.ReadFile(filepath.Join(j.gradebook, "gradebook.csv"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if records, err = csv.NewReader(bytes.NewReader(c)).ReadAll(); err != nil {
		t.Fatalf("the gradebook's CSV: %v\n%s", err, c)
	}
	m, err := os.ReadFile(filepath.Join(j.gradebook, "gradebook.md"))
	if err != nil {
		t.Fatal(err)
	}
	return code, out, records, string(m)
}

// A class graded from a roster: alice handed in every notebook solved (and the setup notebook,
// which has no exercise), bob the untouched 01_rwkv, carol nothing. The gradebook has a row per
// exercise of each student and one for carol, a summary line per student, and the exit status is 1.
// Alice alone, with a notebook given as a path besides, grades with exit status 0.
func TestGradeClassWithoutGPU(t *testing.T) {
	env := openNoGPU(t)
	nbs := committed(t)
	root, folders := class(t, "alice", "bob", "carol")
	for _, p := range nbs {
		if err := os.MkdirAll(folders[0].Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		solved(t, p, folders[0].Dir)
	}
	copyInto(t, filepath.Join("..", "..", "notebooks", "00_setup.ipynb"), folders[0].Dir)
	copyInto(t, filepath.Join("..", "..", "notebooks", "01_rwkv.ipynb"), folders[1].Dir)
	j := job{students: folders, gradebook: filepath.Join(root, "gradebook"), jsonOut: filepath.Join(root, "grades.json")}
	code, out, records, md := gradeClass(t, env, j)
	if code != 1 {
		t.Errorf("exit %d, want 1 (bob failed, carol handed in nothing)\n%s", code, out)
	}
	if got := strings.Join(records[0], ","); got != "student,notebook,exercise,result,speed vs reference,reason" {
		t.Errorf("the CSV's header: %s", got)
	}
	per := map[string][]string{} // each student's results
	for _, r := range records[1:] {
		per[r[0]] = append(per[r[0]], r[3])
	}
	if len(per["alice"]) != exercises(nbs) || strings.Count(strings.Join(per["alice"], ","), string(grade.NotRun)) != exercises(nbs) {
		t.Errorf("alice's results %v, want %d exercises compiled, not run", per["alice"], exercises(nbs))
	}
	if strings.Join(per["bob"], ",") != "FAILED,FAILED" {
		t.Errorf("bob's results %v, want 01_rwkv's two exercises failed", per["bob"])
	}
	if strings.Join(per["carol"], ",") != string(grade.NoNotebooks) {
		t.Errorf("carol's results %v, want one row of no notebooks", per["carol"])
	}
	for _, want := range []string{
		fmt.Sprintf("| alice | %d | 0 | 0 | %d |  |", len(nbs), exercises(nbs)),
		"| bob | 1 | 0 | 2 | 0 |  |",
		"| carol | 0 | 0 | 0 | 0 | no notebooks: " + filepath.Join(root, "carol", "cudalessons") + " does not exist",
	} {
		if !strings.Contains(md, strings.ReplaceAll(want, "_", `\_`)) {
			t.Errorf("the Markdown's summary has no %q:\n%s", want, md)
		}
	}
	for _, want := range []string{"student  notebook", "Summary", "Students with no notebooks to grade: 1 of 3.", "Gradebook: " + j.gradebook} {
		if !strings.Contains(out, want) {
			t.Errorf("the output has no %q:\n%s", want, out)
		}
	}
	var marks []grade.Mark
	if b, err := os.ReadFile(j.jsonOut); err != nil || json.Unmarshal(b, &marks) != nil || len(marks) != len(records)-1 || marks[0].Student != "alice" {
		t.Errorf("the JSON's marks (%v): %+v", err, marks)
	}
	t.Log("\n" + out)

	// Alice alone, and a notebook given as a path: every exercise compiled, exit status 0.
	extra := solved(t, nbs[0], t.TempDir())
	j = job{paths: []string{extra}, students: folders[:1], gradebook: filepath.Join(root, "again")}
	code, out, records, md = gradeClass(t, env, j)
	if code != 0 || len(records) != 1+exercises(nbs)+exercises(nbs[:1]) {
		t.Errorf("alice and a path: exit %d, %d records\n%s", code, len(records), out)
	}
	if r := records[1]; r[0] != "" || r[1] != extra {
		t.Errorf("the path's row: %q, want no student and the path", r)
	}
	if !strings.Contains(md, fmt.Sprintf("| (notebooks given as paths) | 1 | 0 | 0 | %d |  |", exercises(nbs[:1]))) {
		t.Errorf("the summary has no line for the path:\n%s", md)
	}
}

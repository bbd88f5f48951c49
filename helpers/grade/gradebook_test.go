package grade

import (
	"bytes"
	"encoding/csv"
	"errors"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons"
)

// noGPU is an env in the no-GPU mode as Table and Banner read it, without NVRTC: enough for
// gradebooks of hand-made marks and for folders with no exercise to check.
func noGPU() *lab.Env {
	return &lab.Env{Mode: lab.NoGPUMode, Why: errors.New("no GPU in this test")}
}

// A class of hand-made marks: alice passed one exercise (timed) and failed one, bob handed in
// nothing, carol named a notebook like a spreadsheet formula, dave's kernel compiled without a GPU.
func class() []Mark {
	return []Mark{
		{Student: "alice", Row: Row{Notebook: "01_rwkv.ipynb", Lesson: "01_rwkv", Exercise: 1, Cell: 10, Verdict: Passed,
			Reason: "correct on every shape", Mine: bench.Timing{Median: 0.5}, Ref: bench.Timing{Median: 1}, RefName: "step 3", Speedup: 2}},
		{Student: "alice", Row: Row{Notebook: "01_rwkv.ipynb", Lesson: "01_rwkv", Exercise: 2, Cell: 14, Verdict: Failed,
			Reason: "It does not compile:\nerror: a | b is not __shared__"}},
		{Student: "bob", Row: Row{Verdict: NoNotebooks, Reason: "/home/bob/cudalessons does not exist"}},
		{Student: "carol", Row: Row{Notebook: "=1+1.ipynb", Verdict: Ungraded, Reason: "=1+1.ipynb is not a notebook"}},
		{Student: "dave", Row: Row{Notebook: "02_oneflow.ipynb", Lesson: "02_oneflow", Exercise: 1, Cell: 21, Verdict: NotRun,
			Reason: "mul_mine compiled"}},
	}
}

func TestGradebookCSV(t *testing.T) {
	g := NewGradebook(noGPU(), class())
	var b bytes.Buffer
	if err := g.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	got, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatalf("the CSV does not read back: %v\n%s", err, b.String())
	}
	want := [][]string{
		{"student", "notebook", "exercise", "result", "speed vs reference", "reason"},
		{"alice", "01_rwkv.ipynb", "01_rwkv #1 (cell 10)", "passed", "2.00x step 3 (yours 500.0 µs, 1 ms)", "correct on every shape"},
		{"alice", "01_rwkv.ipynb", "01_rwkv #2 (cell 14)", "FAILED", "", "It does not compile:\nerror: a | b is not __shared__"},
		{"bob", "", "", "no notebooks", "", "/home/bob/cudalessons does not exist"},
		{"carol", "'=1+1.ipynb", "?", "NOT GRADED", "", "'=1+1.ipynb is not a notebook"},
		{"dave", "02_oneflow.ipynb", "02_oneflow #1 (cell 21)", "compiled, not run (no GPU)", "", "mul_mine compiled"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CSV:\n%q\nwant\n%q", got, want)
	}
}

func TestGradebookMarkdown(t *testing.T) {
	g := NewGradebook(noGPU(), class())
	g.Date = time.Date(2026, 3, 4, 10, 30, 0, 0, time.UTC)
	var b bytes.Buffer
	if err := g.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	lines := strings.Split(md, "\n")
	if lines[0] != "# Gradebook, 2026-03-04 10:30 UTC" || !strings.HasPrefix(lines[2], "No-GPU mode (no GPU in this test)") {
		t.Errorf("the title and the banner:\n%s", md)
	}
	for _, want := range []string{
		"## Summary\n\n| student | notebooks | passed | failed or not graded | compiled, not run | note |\n|---|---|---|---|---|---|\n",
		"| alice | 1 | 1 | 1 | 0 |  |\n",
		"| bob | 0 | 0 | 0 | 0 | no notebooks: /home/bob/cudalessons does not exist |\n",
		"| carol | 1 | 0 | 1 | 0 |  |\n",
		"| dave | 1 | 0 | 0 | 1 |  |\n",
		"## Grades\n\n| student | notebook | exercise | result | speed vs reference | reason |\n",
		"| alice | 01\\_rwkv.ipynb | 01\\_rwkv #1 (cell 10) | passed | 2.00x step 3 (yours 500.0 µs, 1 ms) | correct on every shape |\n",
		"| It does not compile:<br>error: a \\| b is not \\_\\_shared\\_\\_ |\n", // one line, its | escaped
		"| bob |  |  | no notebooks |  | /home/bob/cudalessons does not exist |\n",
		"\nStudents with no notebooks to grade: 1 of 4. 1 passed, 3 failed or not graded, 1 compiled but not run. No-GPU mode",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown has no %q:\n%s", want, md)
		}
	}
	// Every line of a table has as many cells as its header.
	for _, l := range lines {
		if strings.HasPrefix(l, "|") && strings.Count(strings.ReplaceAll(l, `\|`, ""), "|") != 7 {
			t.Errorf("a table line with the wrong number of cells: %q", l)
		}
	}
}

func TestGradebookSummaryAndTable(t *testing.T) {
	g := NewGradebook(noGPU(), class())
	want := []Tally{
		{Student: "alice", Notebooks: 1, Passed: 1, Failed: 1},
		{Student: "bob", Note: "/home/bob/cudalessons does not exist"},
		{Student: "carol", Notebooks: 1, Failed: 1},
		{Student: "dave", Notebooks: 1, NotRun: 1},
	}
	if got := g.Summary(); !reflect.DeepEqual(got, want) {
		t.Errorf("summary %+v\nwant %+v", got, want)
	}
	if passed, failed, notRun := Count(g.Rows()); passed != 1 || failed != 3 || notRun != 1 {
		t.Errorf("count %d %d %d: a student with no notebooks counts as a failure", passed, failed, notRun)
	}
	if tb := g.Table(); tb.Header[0] != "student" || tb.Rows[2][0] != "bob" {
		t.Errorf("the class's table has no student column: %v", tb.Header)
	}
	// Notebooks graded from paths print as Table prints them: no student column.
	rows := []Row{class()[0].Row}
	if got, want := NewGradebook(noGPU(), []Mark{{Row: rows[0]}}).Table().Text(), Table(noGPU(), rows).Text(); got != want {
		t.Errorf("marks without students:\n%s\nwant Table's\n%s", got, want)
	}
}

func TestGradebookFiles(t *testing.T) {
	g := NewGradebook(noGPU(), class())
	dir := filepath.Join(t.TempDir(), "gradebook")
	c, m, err := g.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c != filepath.Join(dir, "gradebook.csv") || m != filepath.Join(dir, "gradebook.md") {
		t.Errorf("paths %s %s", c, m)
	}
	var want bytes.Buffer
	if err := g.WriteCSV(&want); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{c, m} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want the owner's only", p, st.Mode())
		}
	}
	if got, _ := os.ReadFile(c); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("the CSV file differs from WriteCSV's")
	}
	if _, _, err := g.WriteFiles(filepath.Join(c, "sub")); err == nil {
		t.Error("a gradebook was written under a file")
	}
}

// copyNotebook copies a committed notebook into dir.
func copyNotebook(t *testing.T, name, dir string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "notebooks", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Every way a student can have nothing to grade gets one row that says which; a broken file is
// that student's row, not the end of the grading.
func TestFoldersWithNothingToGrade(t *testing.T) {
	root := t.TempDir()
	dir := func(name string) string { return filepath.Join(root, name, "cudalessons") }
	// carol has only Jupyter's checkpoints, dave only a notebook without exercises, erin a broken file.
	copyNotebook(t, "01_rwkv.ipynb", filepath.Join(dir("carol"), ".ipynb_checkpoints"))
	copyNotebook(t, "00_setup.ipynb", dir("dave"))
	copyNotebook(t, "00_setup.ipynb", dir("erin"))
	if err := os.WriteFile(filepath.Join(dir("erin"), "mine.ipynb"), []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "frank"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir("frank"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var folders []Folder
	for _, s := range []string{"bob", "carol", "dave", "erin", "frank"} {
		folders = append(folders, Folder{Student: s, Dir: dir(s)})
	}
	marks, err := Folders(noGPU(), folders, lessons.All())
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		student string
		verdict Verdict
		reason  string
	}{
		{"bob", NoNotebooks, dir("bob") + " does not exist"},
		{"carol", NoNotebooks, "no notebook (.ipynb) in " + dir("carol")},
		{"dave", NoNotebooks, "none of the notebooks in " + dir("dave") + " has an exercise cell (00_setup.ipynb)"},
		{"erin", Ungraded, "mine.ipynb is not a notebook"},
		{"frank", NoNotebooks, dir("frank") + " is not a folder"},
	}
	if len(marks) != len(want) {
		t.Fatalf("%d marks, want %d: %+v", len(marks), len(want), marks)
	}
	for i, w := range want {
		m := marks[i]
		if m.Student != w.student || m.Verdict != w.verdict || !strings.Contains(m.Reason, w.reason) {
			t.Errorf("%s: %s: %s\nwant %s: %s", m.Student, m.Verdict, m.Reason, w.verdict, w.reason)
		}
	}
	if marks[3].Notebook != "mine.ipynb" {
		t.Errorf("erin's broken notebook is named %q, not by its path in her folder", marks[3].Notebook)
	}
}

// A student's real notebooks are graded, named by their path in the student's folder, beside a
// student who has none.
func TestFoldersGradesEachStudent(t *testing.T) {
	env := labtest.OpenFresh(t)
	root := t.TempDir()
	alice := filepath.Join(root, "alice", "cudalessons")
	copyNotebook(t, "00_setup.ipynb", alice)
	copyNotebook(t, "01_rwkv.ipynb", alice)
	marks, err := Folders(env, []Folder{{"alice", alice}, {"bob", filepath.Join(root, "bob", "cudalessons")}}, lessons.All())
	if err != nil {
		t.Fatal(err)
	}
	// 01_rwkv's untouched starters fail in either mode: the PTX already shows the task is not done.
	if len(marks) != 3 {
		t.Fatalf("%d marks, want alice's 2 exercises and bob's none: %+v", len(marks), marks)
	}
	for _, m := range marks[:2] {
		if m.Student != "alice" || m.Notebook != "01_rwkv.ipynb" || m.Lesson != "01_rwkv" || m.Verdict != Failed {
			t.Errorf("alice's mark: %+v", m)
		}
	}
	if m := marks[2]; m.Student != "bob" || m.Verdict != NoNotebooks {
		t.Errorf("bob's mark: %+v", m)
	}
	g := NewGradebook(env, marks)
	if s := g.Summary(); len(s) != 2 || s[0].Notebooks != 1 || s[0].Failed != 2 || s[1].Note == "" {
		t.Errorf("summary %+v", s)
	}
	t.Log("\n" + g.Table().Text() + g.SummaryTable().Text())
}

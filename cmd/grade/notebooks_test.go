package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/grade"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons"
)

// committed returns every committed notebook that holds exercises (a lesson of several notebooks
// may hold them in some of them only).
func committed(t *testing.T) []string {
	t.Helper()
	var paths []string
	for _, l := range lessons.All() {
		for _, nb := range l.NotebookFiles() {
			xs := l.ExercisesIn(nb)
			if len(xs) == 0 {
				continue
			}
			p := filepath.Join("..", "..", "notebooks", nb)
			if _, err := os.Stat(p); err != nil {
				t.Errorf("lesson %s has %d exercises in %s, a notebook that does not exist", l.ID, len(xs), p)
				continue
			}
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		t.Fatal("no lesson has exercises")
	}
	return paths
}

// exercises counts the exercises the notebooks hold.
func exercises(paths []string) int {
	n := 0
	for _, p := range paths {
		for _, l := range lessons.All() {
			n += len(l.ExercisesIn(p))
		}
	}
	return n
}

// solved writes a copy of a committed notebook into dir with every exercise cell's raw string
// replaced by the exercise's solution, the way a student who solved them would hand it in.
func solved(t *testing.T, path, dir string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := grade.Solved(path, data, lessons.All())
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "solved_"+filepath.Base(path))
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// gradeAll runs the command's own code path on paths and returns its exit status, its output and
// the rows it wrote as JSON.
func gradeAll(t *testing.T, env *lab.Env, paths ...string) (int, string, []grade.Row) {
	t.Helper()
	js := filepath.Join(t.TempDir(), "grades.json")
	var stdout, stderr bytes.Buffer
	code := run(env, job{paths: paths, jsonOut: js}, &stdout, &stderr)
	var rows []grade.Row
	if b, err := os.ReadFile(js); err == nil {
		if err := json.Unmarshal(b, &rows); err != nil {
			t.Fatal(err)
		}
	}
	return code, stdout.String() + stderr.String(), rows
}

// Every committed notebook's exercise cell holds the exercise's starter, and every exercise of its
// lesson has a cell (no row of the untouched notebook is "not graded").
func TestCommittedCellsHoldTheStarters(t *testing.T) {
	for _, p := range committed(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		found, problems, err := grade.Find(p, data, lessons.All())
		if err != nil || len(problems) > 0 {
			t.Errorf("%s: %v %+v", p, err, problems)
		}
		for _, f := range found {
			x, _ := f.Lesson.ExerciseByNumber(f.Number)
			if strings.TrimSpace(f.Code) != strings.TrimSpace(x.Starter) {
				t.Errorf("%s, cell %d: the cell's source is not %s's starter", p, f.Cell, x.Title)
			}
		}
		for _, l := range lessons.All() {
			if !l.HasNotebook(p) {
				continue
			}
			if xs := l.ExercisesIn(p); len(found) != len(xs) {
				t.Errorf("%s: %d exercise cells for %d exercises", p, len(found), len(xs))
			}
		}
	}
}

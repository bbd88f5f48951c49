package lab

import (
	"path/filepath"
	"slices"
	"strings"
)

// NotebookFiles are the lesson's notebook files under notebooks/, in reading order: Notebooks, or
// the one named after its ID.
func (l Lesson) NotebookFiles() []string {
	if len(l.Notebooks) > 0 {
		return l.Notebooks
	}
	return []string{l.ID + ".ipynb"}
}

// HasNotebook reports whether name (a file name or a path) is one of the lesson's notebooks.
func (l Lesson) HasNotebook(name string) bool {
	return slices.Contains(l.NotebookFiles(), filepath.Base(name))
}

// NotebookIn returns the lesson's notebook whose name (without .ipynb) name contains, as a copy of
// it ("alice_04_softmax.ipynb") does, and whether there is one.
func (l Lesson) NotebookIn(name string) (string, bool) {
	for _, nb := range l.NotebookFiles() {
		if strings.Contains(name, strings.TrimSuffix(nb, ".ipynb")) {
			return nb, true
		}
	}
	return "", false
}

// ExerciseNotebook is the notebook file whose cell holds exercise x of the lesson.
func (l Lesson) ExerciseNotebook(x Exercise) string {
	if x.Notebook != "" {
		return x.Notebook
	}
	return l.NotebookFiles()[0]
}

// ExercisesIn are the lesson's exercises whose cells are in notebook nb (a file name or a path).
func (l Lesson) ExercisesIn(nb string) []Exercise {
	var out []Exercise
	for _, x := range l.Exercises {
		if l.ExerciseNotebook(x) == filepath.Base(nb) {
			out = append(out, x)
		}
	}
	return out
}

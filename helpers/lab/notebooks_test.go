package lab

import (
	"slices"
	"testing"
)

// A lesson of one notebook is named after its ID; a lesson of several lists them, and its
// exercises say which one holds their cell (the first one when they do not say).
func TestLessonNotebooks(t *testing.T) {
	one := Lesson{ID: "01_rwkv", Exercises: []Exercise{{Number: 1}}}
	if got := one.NotebookFiles(); !slices.Equal(got, []string{"01_rwkv.ipynb"}) {
		t.Errorf("NotebookFiles = %v", got)
	}
	if !one.HasNotebook("../notebooks/01_rwkv.ipynb") || one.HasNotebook("02_oneflow.ipynb") {
		t.Error("HasNotebook")
	}
	two := Lesson{ID: "04_reductions", Notebooks: []string{"04_softmax.ipynb", "04b_layernorm.ipynb"},
		Exercises: []Exercise{{Number: 1}, {Number: 2, Notebook: "04b_layernorm.ipynb"}}}
	if nb, ok := two.NotebookIn("class/alice_04b_layernorm.ipynb"); !ok || nb != "04b_layernorm.ipynb" {
		t.Errorf("NotebookIn = %q, %v", nb, ok)
	}
	if _, ok := two.NotebookIn("04_reductions.ipynb"); ok {
		t.Error("the lesson's ID is not one of its notebooks")
	}
	if xs := two.ExercisesIn("04_softmax.ipynb"); len(xs) != 1 || xs[0].Number != 1 {
		t.Errorf("ExercisesIn(softmax) = %+v", xs)
	}
	if xs := two.ExercisesIn("notebooks/04b_layernorm.ipynb"); len(xs) != 1 || xs[0].Number != 2 {
		t.Errorf("ExercisesIn(layernorm) = %+v", xs)
	}
	if xs := one.ExercisesIn("01_rwkv.ipynb"); len(xs) != 1 {
		t.Errorf("ExercisesIn(one) = %+v", xs)
	}
}

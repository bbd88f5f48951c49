package grade

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons"
)

// nb makes a notebook's JSON from code cells (a markdown cell first, so positions count it).
func nb(t *testing.T, cells ...string) []byte {
	t.Helper()
	all := []map[string]any{{"cell_type": "markdown", "metadata": map[string]any{}, "source": []string{"# title\n"}}}
	for _, c := range cells {
		all = append(all, map[string]any{"cell_type": "code", "metadata": map[string]any{}, "outputs": []any{},
			"source": strings.SplitAfter(c, "\n")})
	}
	b, err := json.Marshal(map[string]any{"cells": all, "nbformat": 4})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const imports = "import (\n\t\"github.com/cudalessons/cudalessons/helpers/lab\"\n\t\"github.com/cudalessons/cudalessons/lessons/rwkv\"\n)\n"

func TestPackagePath(t *testing.T) {
	for _, l := range lessons.All() {
		if p := PackagePath(l); !strings.HasPrefix(p, "github.com/cudalessons/cudalessons/lessons/") {
			t.Errorf("lesson %s: package %q", l.ID, p)
		}
	}
	if p := PackagePath(lab.Lesson{ID: "x"}); p != "" {
		t.Errorf("a lesson with no functions: %q", p)
	}
}

// GoNB's own lines are ignored, the source may be declared in an earlier cell, under an import
// alias, or written in the call; every exercise of the lesson is accounted for.
func TestFindCells(t *testing.T) {
	data := nb(t,
		"!*rm -f go.work && go work init\n",
		imports+"\nvar myShared = `extern \"C\" __global__ void ex1_shared() { /* 1 */ }`\n\n%%\n"+
			"lab.Cell(func(env *lab.Env) error { return env.Exercise(rwkv.Lesson, 1, myShared) })\n",
		"var myPairs = `pairs`\n",
		"%test\nimport (\n\t\"github.com/cudalessons/cudalessons/helpers/lab\"\n\tr \"github.com/cudalessons/cudalessons/lessons/rwkv\"\n)\n"+
			"!echo hello\n%%\nlab.Cell(func(env *lab.Env) error { return env.Exercise(r.Lesson, 2, myPairs) })\n",
		"%%\nlab.Cell(func(env *lab.Env) error { return env.Exercise(rwkv.Lesson, 2, `inline`) })\n",
	)
	found, problems, err := Find("any name.ipynb", data, lessons.All())
	if err != nil || len(problems) != 0 {
		t.Fatalf("%v %+v", err, problems)
	}
	want := []Found{{Cell: 3, Number: 1, Var: "myShared", Code: `extern "C" __global__ void ex1_shared() { /* 1 */ }`},
		{Cell: 5, Number: 2, Var: "myPairs", Code: "pairs"}, {Cell: 6, Number: 2, Code: "inline"}}
	if len(found) != len(want) {
		t.Fatalf("found %+v", found)
	}
	for i, w := range want {
		f := found[i]
		if f.Cell != w.Cell || f.Number != w.Number || f.Var != w.Var || f.Code != w.Code || f.Lesson.ID != "01_rwkv" {
			t.Errorf("cell %d: %+v, want %+v", i, f, w)
		}
	}
}

// Every way a cell cannot be graded gets a message that names the problem.
func TestFindProblems(t *testing.T) {
	for _, c := range []struct {
		name, cell, want string
	}{
		{"renamed", imports + "var myShared = `x`\n%%\nlab.Cell(func(env *lab.Env) error { return env.Exercise(rwkv.Lesson, 1, mySharedV2) })\n",
			"no cell declares mySharedV2 (was the variable renamed?)"},
		{"interpreted", imports + "var myShared = \"x\"\n%%\nlab.Cell(func(env *lab.Env) error { return env.Exercise(rwkv.Lesson, 1, myShared) })\n",
			"interpreted string"},
		{"computed", imports + "var myShared = strings.Repeat(`x`, 2)\n%%\nlab.Cell(func(env *lab.Env) error { return env.Exercise(rwkv.Lesson, 1, myShared) })\n",
			"is not a raw string literal"},
		{"no such exercise", imports + "%%\nlab.Cell(func(env *lab.Env) error { return env.Exercise(rwkv.Lesson, 9, `x`) })\n",
			"has no exercise 9"},
		{"no such lesson", "import \"example.com/mine\"\n%%\nlab.Cell(func(env *lab.Env) error { return env.Exercise(mine.Lesson, 1, `x`) })\n",
			"no lesson has the package mine"},
		{"does not parse", imports + "var myShared = `x`\n%%\nlab.Cell(func(env *lab.Env) error { return env.Exercise(rwkv.Lesson, 1, myShared) }\n",
			"its Go does not parse"},
	} {
		found, problems, err := Find("student.ipynb", nb(t, c.cell), lessons.All())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		hit := false
		for _, p := range problems {
			hit = hit || (strings.Contains(p.Text, c.want) && p.Cell == 2)
		}
		if len(found) != 0 || !hit {
			t.Errorf("%s: found %+v, problems %+v; want %q", c.name, found, problems, c.want)
		}
	}
	// A notebook named for a lesson with no exercise cell at all: each exercise is missing.
	_, problems, err := Find("class/alice_01_rwkv.ipynb", nb(t, "fmt.Println(1)\n"), lessons.All())
	if err != nil || len(problems) != 2 || problems[0].Number != 1 || !strings.Contains(problems[1].Text, "no cell calls env.Exercise(rwkv.Lesson, 2, ...)") {
		t.Errorf("missing cells: %+v %v", problems, err)
	}
	// A lesson of two notebooks: a copy of the one holding its exercises misses them, a copy of the
	// other has none to miss.
	two := []lab.Lesson{{ID: "04_reductions", Notebooks: []string{"04_softmax.ipynb", "04b_layernorm.ipynb"},
		Exercises: []lab.Exercise{{Number: 1}, {Number: 2}}}}
	if _, problems, err := Find("class/bob_04_softmax.ipynb", nb(t, "fmt.Println(1)\n"), two); err != nil || len(problems) != 2 {
		t.Errorf("the softmax notebook without its exercise cells: %+v %v", problems, err)
	}
	if _, problems, err := Find("class/bob_04b_layernorm.ipynb", nb(t, "fmt.Println(1)\n"), two); err != nil || len(problems) != 0 {
		t.Errorf("the layer norm notebook holds no exercise: %+v %v", problems, err)
	}
	if _, _, err := Find("x.ipynb", []byte("not json"), lessons.All()); err == nil {
		t.Error("a file that is not a notebook was read")
	}
}

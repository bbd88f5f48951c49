//go:build nocuda

package trilinear

import (
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"strings"
	"testing"
)

// In the no-GPU mode: every starter and solution compiles, exercise 2's starter fails for a
// structural reason (no reduction across the warp) and its solution passes what can be checked.
func TestExercisesWithoutAGPU(t *testing.T) {
	env := labtest.OpenFresh(t)
	for _, x := range Exercises {
		sol, err := x.Solution()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name, code string
		}{{"starter", x.Starter}, {"solution", sol}} {
			r, err := x.Check(env, c.code)
			if err != nil {
				t.Fatalf("exercise %d %s: %v", x.Number, c.name, err)
			}
			if !r.Compiled || r.Ran {
				t.Errorf("exercise %d %s: compiled %v, ran %v", x.Number, c.name, r.Compiled, r.Ran)
			}
			if c.name == "solution" && !r.Passed {
				t.Errorf("exercise %d solution: %s", x.Number, r.Reason)
			}
		}
	}
	r, err := Exercises[1].Check(env, Starter2)
	if err != nil || r.Passed || !strings.Contains(r.Reason, "no reduction") {
		t.Errorf("exercise 2's starter: passed %v (%s), %v", r.Passed, r.Reason, err)
	}
	r, err = Exercises[0].Check(env, "this is not CUDA")
	if err != nil || r.Compiled || r.Passed || !strings.Contains(r.Reason, "does not compile") {
		t.Errorf("a broken kernel: %+v, %v", r, err)
	}
	// Every step can be edited: Try compiles a replacement of its file.
	for _, st := range Steps {
		src, err := st.source(Launch{File: st.File}, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := Try(env, st.Name, "// my copy\n"+src.Code); err != nil { // an edit: the reader's path
			t.Errorf("Try %s: %v", st.Name, err)
		}
	}
	if err := Try(env, "3", "extern \"C\" __global__ void wrong_name() {}"); err == nil {
		t.Error("Try accepted a kernel without the step's kernel name")
	}
	// The tables and figures build from an empty run (no recording yet).
	run := env.NewRun(ID)
	if n := len(Tables(run)); n != 9 {
		t.Errorf("%d tables", n)
	}
	if _, err := Figures(run); err != nil {
		t.Error(err)
	}
	if err := Intro(env); err != nil {
		t.Error(err)
	}
	for _, st := range Steps {
		if err := Walk(env, st.Name); err != nil {
			t.Errorf("Walk %s: %v", st.Name, err)
		}
	}
}

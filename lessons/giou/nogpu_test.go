//go:build nocuda

package giou

import (
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"strings"
	"testing"
)

// In the no-GPU mode: every starter and solution compiles (and is not run), a broken kernel is
// reported, every step can be edited (Try compiles a replacement of its file and refuses a wrong
// kernel name), and the tables, figures and intro build.
func TestWithoutAGPU(t *testing.T) {
	env := labtest.OpenFresh(t)
	for _, x := range Exercises {
		sol, err := x.Solution()
		if err != nil {
			t.Fatal(err)
		}
		for _, code := range []string{x.Starter, sol} {
			r, err := x.Check(env, code)
			if err != nil || !r.Compiled || r.Ran {
				t.Errorf("exercise %d: compiled %v, ran %v, %v", x.Number, r.Compiled, r.Ran, err)
			}
		}
	}
	r, err := Exercises[0].Check(env, "this is not CUDA")
	if err != nil || r.Compiled || r.Passed || !strings.Contains(r.Reason, "does not compile") {
		t.Errorf("a broken kernel: %+v, %v", r, err)
	}
	for _, st := range Steps {
		src, err := st.source(Kernel{File: st.File}, "")
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
	run := env.NewRun(ID)
	if n := len(Tables(run)); n != 8 {
		t.Errorf("%d tables", n)
	}
	if _, err := Figures(run); err != nil {
		t.Error(err)
	}
	if err := Intro(env); err != nil {
		t.Error(err)
	}
	if err := Autograd(env); err != nil {
		t.Error(err)
	}
	if _, err := NewProblem(env, Generate(Shape{2, 2}, 1), 0); err == nil {
		t.Error("NewProblem without a GPU")
	}
}

// Every step's plan: the article's steps refuse M over 1024 with the limit named; ours take any M
// and fall back to their scalar-load kernel for misaligned boxes.
func TestPlans(t *testing.T) {
	for _, st := range Steps {
		l, err := st.PlanFor(Shape{B: 3, M: 2000}, true)
		if st.Name[0] <= '2' {
			if err == nil || !strings.Contains(err.Error(), "1024") {
				t.Errorf("%s took M = 2000: %v", st.Name, err)
			}
			continue
		}
		if err != nil || l.Kernels[0].Name != st.Kernel || l.Kernels[0].Config.Grid.X < 1 || l.Kernels[0].Config.Grid.X > Grid(3) {
			t.Errorf("%s: %v %v", st.Name, l, err)
		}
		l, err = st.PlanFor(Shape{B: 3, M: 5}, false)
		if err != nil || l.Kernels[0].Name != st.Kernel+"_any" {
			t.Errorf("%s misaligned: %v %v", st.Name, l, err)
		}
	}
	if _, err := Steps[2].PlanFor(Shape{B: -1, M: 1}, true); err == nil {
		t.Error("a negative B was planned")
	}
}

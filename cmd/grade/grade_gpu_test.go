//go:build !nocuda

package main

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/grade"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// On the GPU every untouched starter of the committed notebooks fails, and the same notebooks with
// the solutions pasted in pass every exercise, each timed against its reference step; the exit
// statuses are 1 and 0.
func TestGradeOnGPU(t *testing.T) {
	env := labtest.Open(t)
	nbs := committed(t)
	code, out, rows := gradeAll(t, env, nbs...)
	if code != 1 || len(rows) != exercises(nbs) {
		t.Fatalf("the untouched notebooks: exit %d, %d rows\n%s", code, len(rows), out)
	}
	for _, r := range rows {
		if r.Verdict != grade.Failed {
			t.Errorf("untouched starter %s #%d: %s: %s", r.Lesson, r.Exercise, r.Verdict, r.Reason)
		}
	}
	t.Log("\n" + out)
	dir := t.TempDir()
	for _, p := range nbs {
		solved(t, p, dir)
	}
	code, out, rows = gradeAll(t, env, dir)
	if code != 0 || len(rows) != exercises(nbs) {
		t.Fatalf("the solutions: exit %d, %d rows\n%s", code, len(rows), out)
	}
	for _, r := range rows {
		if r.Verdict != grade.Passed || r.Speedup <= 0 || r.RefName == "" {
			t.Errorf("solution %s #%d: %s, speedup %.2f: %s", r.Lesson, r.Exercise, r.Verdict, r.Speedup, r.Reason)
		}
	}
	t.Log("\n" + out)
}

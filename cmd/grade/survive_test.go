package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cudalessons/cudalessons/helpers/grade"
	"github.com/cudalessons/cudalessons/helpers/grade/gradetest"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons"
)

// A class with a student whose kernel never ends and one whose kernel faults: grading finishes,
// each of the two gets its verdict (on a GPU: the deadline, the fault; without one: compiled, not
// run, since everything the PTX shows is right), the other exercises are graded as usual, and on a
// GPU no process of the grader is left on it.
func TestGradeSurvivesAHangAndAFault(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	env, err := lab.OpenWith(lab.Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	src := filepath.Join("..", "..", "notebooks", gradetest.Lesson+".ipynb")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, m := range []gradetest.Mistake{gradetest.Hang, gradetest.Fault} {
		nb, err := grade.HandedIn(src, data, lessons.All(), m.Apply)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.ReplaceAll(m.Name, " ", "_") + "_" + gradetest.Lesson + ".ipynb"
		if err := os.WriteFile(filepath.Join(dir, name), nb, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	code, out, rows := gradeAll(t, env, dir)
	took := time.Since(start)
	t.Logf("graded in %v:\n%s", took.Round(time.Second), out)
	if code != 1 {
		t.Errorf("exit %d, want 1 (the untouched starters fail)", code)
	}
	per := 0
	for _, l := range lessons.All() {
		if l.ID == gradetest.Lesson {
			per = len(l.Exercises)
		}
	}
	if len(rows) != 2*per {
		t.Fatalf("%d rows, want %d (every exercise of both notebooks)", len(rows), 2*per)
	}
	for _, r := range rows {
		if r.Exercise != gradetest.Exercise {
			if r.Verdict != grade.Failed {
				t.Errorf("%s #%d, an untouched starter: %s", r.Notebook, r.Exercise, r.Verdict)
			}
			continue
		}
		m := gradetest.Hang
		if strings.Contains(r.Notebook, "past_the_end") {
			m = gradetest.Fault
		}
		switch {
		case !env.GPU():
			if r.Verdict != grade.NotRun {
				t.Errorf("%s without a GPU: %s (%s), want %s", m.Name, r.Verdict, r.Reason, grade.NotRun)
			}
		case r.Verdict != grade.Failed || !strings.Contains(r.Reason, m.Verdict):
			t.Errorf("%s: %s, reason %q; want %s with %q", m.Name, r.Verdict, r.Reason, grade.Failed, m.Verdict)
		}
	}
	if env.GPU() {
		if took > 3*time.Minute {
			t.Errorf("grading took %v: the hang was not stopped at its deadline", took)
		}
		if left := ourProcessesOnGPU(t); len(left) > 0 {
			t.Errorf("processes of this test still on the GPU: %v", left)
		}
	}
}

// ourProcessesOnGPU lists the compute processes nvidia-smi shows that are this process's children
// (the grader's child processes), after giving the driver a moment to free an ended one.
func ourProcessesOnGPU(t *testing.T) []int {
	t.Helper()
	var ours []int
	for try := 0; try < 10; try++ {
		out, err := exec.Command("nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader").Output()
		if err != nil {
			t.Logf("nvidia-smi: %v (the check of processes left on the GPU is skipped)", err)
			return nil
		}
		ours = ours[:0]
		for _, f := range strings.Fields(string(out)) {
			pid, err := strconv.Atoi(f)
			if err != nil || pid == os.Getpid() {
				continue
			}
			if ppid, ok := parentOf(pid); ok && ppid == os.Getpid() {
				ours = append(ours, pid)
			}
		}
		if len(ours) == 0 {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return ours
}

// parentOf reads a process's parent from /proc; ok is false when the process is gone.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

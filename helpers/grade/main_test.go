package grade

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/rerun"
	"github.com/cudalessons/cudalessons/helpers/watchdog"
	"github.com/cudalessons/cudalessons/lessons"
)

// The test binary is also the grading child of the tests that grade in a child process.
func TestMain(m *testing.M) {
	ServeChild(lessons.All())
	os.Exit(m.Run())
}

// An exercise checked in a child process comes back as the child's own result: here, in either
// mode, the first exercise's solution (compiled, and on a GPU checked and passed).
func TestIsolatedChildReturnsItsResult(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	env, err := lab.OpenWith(lab.Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	var l lab.Lesson
	for _, c := range lessons.All() {
		if len(c.Exercises) > 0 {
			l = c
			break
		}
	}
	x := l.Exercises[0]
	sol, err := x.Solution()
	if err != nil {
		t.Fatal(err)
	}
	r, err := isolated(env, l, x, sol)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Compiled || !r.Passed || r.Ran != env.GPU() {
		t.Errorf("%s #%d solution in a child: %+v", l.ID, x.Number, r)
	}
	r, err = isolated(env, l, x, sol+"\nthis is not CUDA\n")
	if err != nil {
		t.Fatal(err)
	}
	if r.Compiled || r.Passed || !strings.HasPrefix(r.Reason, "It does not compile") {
		t.Errorf("a broken source in a child: %+v", r)
	}
}

func TestChildResultOfADeadlineAndACrash(t *testing.T) {
	exit := func(code int) error {
		err := exec.Command("sh", "-c", "exit "+string(rune('0'+code))).Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("exit %d: %v", code, err)
		}
		return err
	}
	out := "Your kernel mul_mine did not finish: the GPU was still running it after 10s, its deadline. Still running: kernel mul_mine (grid 528, block 256, 0 bytes of dynamic shared memory)."
	r := childResult(rerun.Result{Output: out, Err: exit(watchdog.ExitCode)})
	if r.Passed || r.Reason != "timed out after 10s in mul_mine: a loop that never ends, or a __syncthreads() not every thread reaches." {
		t.Errorf("a child ended at its deadline: %+v", r)
	}
	r = childResult(rerun.Result{Output: "panic: runtime error\n", Err: exit(2)})
	if r.Passed || !strings.Contains(r.Reason, "the check crashed (exit status 2): panic: runtime error") {
		t.Errorf("a crashed child: %+v", r)
	}
	r = childResult(rerun.Result{Output: "", Err: errors.New("signal: killed"), TimedOut: true})
	if r.Passed || !strings.Contains(r.Reason, "the time limit of one exercise's check") {
		t.Errorf("a child at its time limit: %+v", r)
	}
}

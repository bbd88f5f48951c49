package grade

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/rerun"
	"github.com/cudalessons/cudalessons/helpers/watchdog"
)

// On the GPU each exercise is checked in a child process: the grading program started again
// (rerun) with the task childTask and the job in a file named by jobEnv. A kernel that never ends
// ends its child at the deadline (lab.CheckExercise), a fault loses only the child's GPU context, a
// crash only the child: each becomes that exercise's verdict, and grading goes on to the next.
const (
	childTask = "grade-exercise"
	jobEnv    = "KERNELS_GRADE_JOB"
	// resultPrefix starts the child's line with its result as JSON.
	resultPrefix = "grade-result: "
)

// ChildLimit bounds one exercise's child process as a whole (its own deadline on every wait for
// the GPU stops a kernel that never ends much sooner).
const ChildLimit = 5 * time.Minute

// job is one exercise to check in a child.
type job struct {
	Lesson   string `json:"lesson"`
	Exercise int    `json:"exercise"`
	Code     string `json:"code"`
}

// ServeChild makes this process a grading child when it was started as one: it checks the exercise
// of its job, writes the result on stdout and exits. Otherwise it returns at once. The grading
// command calls it first thing in main, and so must the TestMain of any test binary that grades on
// a GPU (the child is the same executable).
func ServeChild(lessons []lab.Lesson) {
	if rerun.Task() != childTask {
		return
	}
	os.Exit(serveChild(lessons))
}

func serveChild(lessons []lab.Lesson) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "grade child:", err)
		return 2
	}
	data, err := os.ReadFile(os.Getenv(jobEnv))
	if err != nil {
		return fail(err)
	}
	var j job
	if err := json.Unmarshal(data, &j); err != nil {
		return fail(err)
	}
	x, err := exerciseOf(lessons, j.Lesson, j.Exercise)
	if err != nil {
		return fail(err)
	}
	env, err := lab.Open()
	if err != nil {
		return fail(err)
	}
	defer env.Close()
	r, err := env.CheckExercise(x, j.Code)
	if err != nil {
		return fail(err)
	}
	if v, ok := gpu.FaultVerdict(r.Reason); ok {
		r.Reason = v + ": " + r.Reason
	}
	out, err := json.Marshal(r)
	if err != nil {
		return fail(err)
	}
	fmt.Printf("%s%s\n", resultPrefix, out)
	return 0
}

func exerciseOf(lessons []lab.Lesson, id string, n int) (lab.Exercise, error) {
	for _, l := range lessons {
		if l.ID == id {
			return l.ExerciseByNumber(n)
		}
	}
	return lab.Exercise{}, fmt.Errorf("no lesson %s", id)
}

// check runs exercise n of lesson l on code: on the GPU in a child process (isolated), without one
// in this process (nothing can hang or fault there).
func check(env *lab.Env, l lab.Lesson, x lab.Exercise, code string) (lab.ExerciseResult, error) {
	if !env.GPU() {
		return env.CheckExercise(x, code)
	}
	return isolated(env, l, x, code)
}

var stillRunning = regexp.MustCompile(`after ([0-9.]+m?s), its deadline.*?Still running: kernel (\S+)`)

// isolated checks x in a child process and turns its end into a result: its own result, or a
// verdict for a deadline, a crash or the child's time limit.
func isolated(env *lab.Env, l lab.Lesson, x lab.Exercise, code string) (lab.ExerciseResult, error) {
	f, err := os.CreateTemp("", "grade-job-*.json")
	if err != nil {
		return lab.ExerciseResult{}, err
	}
	defer os.Remove(f.Name())
	data, _ := json.Marshal(job{Lesson: l.ID, Exercise: x.Number, Code: code})
	if _, err := f.Write(data); err != nil {
		f.Close()
		return lab.ExerciseResult{}, err
	}
	f.Close()
	extra := []string{jobEnv + "=" + f.Name()}
	if env.Quick {
		extra = append(extra, lab.QuickEnv+"=1")
	}
	res, err := rerun.Run(rerun.Spec{Task: childTask, Env: extra, Timeout: ChildLimit})
	if err != nil {
		return lab.ExerciseResult{}, err
	}
	return childResult(res), nil
}

// childResult reads a child's end: the result line it printed, or why it printed none.
func childResult(res rerun.Result) lab.ExerciseResult {
	for _, line := range strings.Split(res.Output, "\n") {
		if s, ok := strings.CutPrefix(line, resultPrefix); ok {
			var r lab.ExerciseResult
			if err := json.Unmarshal([]byte(s), &r); err == nil {
				return r
			}
		}
	}
	r := lab.ExerciseResult{Compiled: true, Ran: true}
	text := strings.Join(strings.Fields(res.Output), " ")
	switch code := exitCode(res.Err); {
	case res.TimedOut:
		r.Reason = fmt.Sprintf("stopped after %v, the time limit of one exercise's check.", ChildLimit)
	case code == watchdog.ExitCode:
		if m := stillRunning.FindStringSubmatch(text); m != nil {
			r.Reason = fmt.Sprintf("timed out after %s in %s: a loop that never ends, or a __syncthreads() not every thread reaches.", m[1], m[2])
		} else {
			r.Reason = "timed out: " + tailWords(text, 60)
		}
	default:
		r.Reason = fmt.Sprintf("the check crashed (%v): %s", res.Err, tailWords(text, 60))
	}
	return r
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

func tailWords(s string, n int) string {
	w := strings.Fields(s)
	return strings.Join(w[max(0, len(w)-n):], " ")
}

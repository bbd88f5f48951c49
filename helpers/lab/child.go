package lab

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// Sanitize and Profile run a reader's kernel under a CUDA tool that must start the process itself
// (compute-sanitizer, Nsight Compute): the cell's program starts itself again under the tool
// (helpers/rerun), in a process group of its own that an interrupted cell kills. The child runs
// the cell up to the same call, where the call sees its rerun task, runs the trial once (runOnce)
// and exits; the parent compiles first (compileForTool) and reads the child's output.

// childPrefix starts the line a tool's child writes with its check's outcome.
const childPrefix = "rerun-child: "

// childPassed is the child's outcome when the check passed.
const childPassed = "the check passed"

// compileForTool compiles code in place of t's step (the original when code is empty), as the
// reader's when it is theirs, before a run under a tool; who names it for the messages.
func (e *Env) compileForTool(t Trial, code string) (who string, reps []record.KernelReport, err error) {
	who = "the original " + t.Step
	if code != "" {
		who = "your " + t.Step
	}
	err = e.asReader(code != "", func() (err error) { reps, err = t.Compile(code); return err })
	return who, reps, err
}

// runOnce is the child of Sanitize and Profile: it checks code once (Measure, which also times it
// by the env's method), writes the outcome on one line (childPrefix) and exits, 0 when the check
// passed. Every wait for the GPU has limit: a kernel that never ends ends the child even if its
// parent is gone.
func runOnce(e *Env, t Trial, code string, limit time.Duration) {
	err := e.asReader(code != "", func() error {
		if !e.GPU() {
			return fmt.Errorf("no GPU in the child process (%s)", e.Mode)
		}
		defer e.Session.GuardWaits(func(int) time.Duration { return limit }, func(pending []gpu.LaunchInfo, waited, _ time.Duration) {
			fmt.Printf("%s%s\n", childPrefix, TimeoutMessage(t.Step, waited, 0, pending))
		})()
		_, err := t.Measure(code)
		return err
	})
	if err != nil {
		fmt.Printf("%s%s\n", childPrefix, strings.ReplaceAll(err.Error(), "\n", " "))
		os.Exit(1)
	}
	fmt.Printf("%s%s\n", childPrefix, childPassed)
	os.Exit(0)
}

// childLine is the outcome line of a tool's child in its output, or "".
func childLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if s, ok := strings.CutPrefix(l, childPrefix); ok {
			return s
		}
	}
	return ""
}

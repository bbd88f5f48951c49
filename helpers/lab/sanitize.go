package lab

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/rerun"
	"github.com/cudalessons/cudalessons/helpers/sanitize/output"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// UnderSanitizer reports whether this process runs under compute-sanitizer for Sanitize (or
// cmd/sanitize): a Trial's Measure may then check a smaller problem, as the tools run a kernel 10 to
// 100 times slower.
func UnderSanitizer() bool { return os.Getenv(gpu.SanitizerEnv) != "" }

// sanitizeTask is the rerun task of Sanitize's child process.
const sanitizeTask = "sanitize"

// SanitizeTools are the compute-sanitizer tools Sanitize runs: memcheck (accesses out of bounds,
// misaligned, through a bad pointer), racecheck (shared memory read and written by several threads
// with no barrier between), synccheck (a __syncthreads not every thread reaches), initcheck
// (global memory read before it was written).
var SanitizeTools = []string{"memcheck", "racecheck", "synccheck", "initcheck"}

// SanitizeLimit is how long the run under compute-sanitizer may take (it runs a kernel 10 to 100
// times slower than alone).
const SanitizeLimit = 3 * time.Minute

// maxFindings is how many of the sanitizer's reports a cell shows.
const maxFindings = 5

// Sanitize runs the reader's code for trial t (the original when code is empty) once, checked but
// not timed, in a child process under compute-sanitizer with the given tool (memcheck when
// empty), compiled with line information, and shows the first reports with the kernel's source
// line, thread and block. The child is this same program started again (rerun): it runs the cell
// up to this call, checks the code once and exits. Without a GPU, or without compute-sanitizer, it
// says what it needs.
func (e *Env) Sanitize(t Trial, code, tool string) error {
	if tool == "" {
		tool = "memcheck"
	}
	known := false
	for _, k := range SanitizeTools {
		known = known || k == tool
	}
	if !known {
		return fmt.Errorf("compute-sanitizer tool %q: the tools are %s", tool, strings.Join(SanitizeTools, ", "))
	}
	if rerun.Task() == sanitizeTask {
		runOnce(e, t, code, SanitizeLimit) // does not return
	}
	if t.Close != nil {
		defer t.Close()
	}
	who, _, err := e.compileForTool(t, code)
	if err != nil {
		return err
	}
	if !e.GPU() {
		show.Note(show.Info, fmt.Sprintf("%s compiled. Running it under compute-sanitizer needs a GPU (%s) and the CUDA toolkit's compute-sanitizer.", capital(who), e.Mode))
		return nil
	}
	exe, err := rerun.FindTool("compute-sanitizer")
	if err != nil {
		show.Note(show.Warning, "Running "+who+" under compute-sanitizer needs the CUDA toolkit: "+err.Error())
		return nil
	}
	wrapper := []string{exe, "--tool", tool, "--show-backtrace", "no", "--print-limit", "100"}
	if tool == "initcheck" {
		wrapper = append(wrapper, "--track-unused-memory", "no")
	}
	res, err := rerun.Run(rerun.Spec{Wrapper: wrapper, Task: sanitizeTask, Timeout: SanitizeLimit,
		Env: []string{gpu.SanitizerEnv + "=" + tool, compile.LineInfoEnv + "=1"}})
	if err != nil {
		return err
	}
	show.Note(show.Info, SanitizeReport(who, tool, code, res))
	return nil
}

// SanitizeReport is what Sanitize shows for a run under compute-sanitizer: the verdict, and the
// first reports with their source lines.
func SanitizeReport(who, tool, code string, res rerun.Result) string {
	errs, hazards, summary := output.Summary(res.Output)
	found := output.Findings(res.Output)
	var b strings.Builder
	switch {
	case res.TimedOut:
		fmt.Fprintf(&b, "compute-sanitizer %s: %s did not finish in %s under the tool (a kernel that never ends? Try names it).", tool, who, roundSec(SanitizeLimit))
	case len(found) > 0:
		n := max(errs, hazards, len(found))
		fmt.Fprintf(&b, "compute-sanitizer %s found %d %s in %s (one run, %s). The first:", tool, n, plural(n, "report"), who, roundSec(res.Took))
		for i, f := range found {
			if i == maxFindings {
				fmt.Fprintf(&b, "\n\n... and %d more.", len(found)-maxFindings)
				break
			}
			b.WriteString("\n\n" + f.Describe(code))
		}
	case summary && errs == 0 && hazards == 0:
		fmt.Fprintf(&b, "compute-sanitizer %s found nothing wrong in %s (one run, %s).", tool, who, roundSec(res.Took))
	case summary:
		fmt.Fprintf(&b, "compute-sanitizer %s found %d errors and %d hazards in %s. Its output ends:\n%s", tool, errs, hazards, who, tail(res.Output, 15))
	default:
		fmt.Fprintf(&b, "compute-sanitizer %s gave no summary for %s (%v). Its output ends:\n%s", tool, who, res.Err, tail(res.Output, 15))
	}
	if line := childLine(res.Output); line != "" {
		b.WriteString("\n\nThe run's own result: " + line)
	}
	return b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

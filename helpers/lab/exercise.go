package lab

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// Exercise is one exercise of a lesson: a kernel the reader writes in a notebook cell, and the
// lesson's own check of it. Every lesson lists its exercises in Lesson.Exercises, so that a notebook
// cell, the tests and the grading command (cmd/grade) all run the same check.
//
// The notebook's exercise cell holds the reader's CUDA source in a Go raw string and calls
// Env.Exercise with the lesson, the exercise's number and that string:
//
//	var mySource = `extern "C" __global__ void ex1_shared(...) { ... }`
//
//	%%
//	lab.Cell(func(env *lab.Env) error { return env.Exercise(rwkv.Lesson, 1, mySource) })
//
// The grader finds such cells, reads the string without running the cell's Go code, and calls Check.
type Exercise struct {
	Number int // 1-based within its lesson
	// Notebook is the notebook file whose cell holds the exercise, for a lesson of several
	// notebooks; empty means the lesson's first notebook (Lesson.NotebookFiles).
	Notebook string
	Title    string // "Exercise 1: stage the rows in shared memory"
	Task     string // Markdown: what to do, the kernel's name and launch, its limits
	Kernel   string // the extern "C" name the reader's source must define
	// Starter is the source the notebook's cell starts from. It compiles, and Check fails it (a test
	// proves both), so an untouched exercise is never graded as done.
	Starter string
	// Solution returns the reference solution, kept in the lesson's kernels package, out of the notebook.
	Solution func() (string, error)
	// Check compiles code and, in the GPU mode, checks it on fresh random inputs with NaN-poisoned
	// outputs against the float64 reference (on awkward shapes and the lesson's own) and times it
	// against the lesson's step it replaces. In the no-GPU mode it compiles and whatever runs without
	// a GPU, and says so in Reason with Ran false. An error is a failure of the lab itself, not of the
	// reader's kernel: a kernel that does not compile or is wrong comes back as Passed false.
	Check func(env *Env, code string) (ExerciseResult, error)
}

// ExerciseResult is the outcome of checking a reader's kernel for an exercise.
type ExerciseResult struct {
	Compiled bool
	Ran      bool // checked on a GPU (false in the no-GPU mode)
	Passed   bool // compiled, and (GPU mode) correct on every shape checked
	// Reason is one or two sentences: why it passed or what failed first (the compile error's first
	// line, the shape and element that were wrong, what the task asks that the kernel does not do).
	Reason string
	Checks []string // one line per shape checked
	// Mine and Ref are the reader's kernel and the reference step, timed in the same run (zero when
	// not timed); RefName names the reference step.
	Mine, Ref bench.Timing
	RefName   string
	Report    record.KernelReport // the compile report of the reader's kernel
	// Log is the compiler's log with the source lines it names, when the kernel did not compile.
	Log string
}

// Speedup is the reference's median time over the reader's, or 0 when either was not timed.
func (r ExerciseResult) Speedup() float64 {
	if r.Mine.Median <= 0 || r.Ref.Median <= 0 {
		return 0
	}
	return r.Ref.Median / r.Mine.Median
}

// ExerciseByNumber returns exercise n (1-based) of lesson l.
func (l Lesson) ExerciseByNumber(n int) (Exercise, error) {
	for _, x := range l.Exercises {
		if x.Number == n {
			return x, nil
		}
	}
	return Exercise{}, fmt.Errorf("lesson %s has no exercise %d (it has %d)", l.ID, n, len(l.Exercises))
}

// ExerciseSource is the name a reader's (or the grader's) code for an exercise whose kernel is
// called kernel is compiled and launched under: "my_<kernel>.cu".
func ExerciseSource(kernel string) string { return "my_" + kernel + ".cu" }

// BuildExercise compiles code for exercise x, the first thing every exercise's check does. When
// code does not compile, or defines no extern "C" kernel named x.Kernel, it returns a nil Program and
// a failed result that says so (with the compiler's log); otherwise the Program and a result with
// Compiled true. An error is a failure of the lab, not of the code.
func (e *Env) BuildExercise(x Exercise, code string) (*Program, ExerciseResult, error) {
	var r ExerciseResult
	src := compile.Source{Name: ExerciseSource(x.Kernel), Code: code}
	res, err := compile.PTX(src, compile.Options{Arch: e.Arch()})
	var ce *compile.Error
	switch {
	case errors.As(err, &ce):
		first, _, _ := strings.Cut(strings.TrimSpace(ce.Log), "\n")
		r.Reason = "It does not compile: " + first
		r.Log = ce.Error()
		return nil, r, nil
	case err != nil:
		return nil, r, err
	}
	if _, err := compile.Instructions(res.PTX, x.Kernel); err != nil {
		r.Reason = fmt.Sprintf("It compiles, but defines no kernel %s: the exercise's kernel must be called %s and declared extern \"C\" __global__.", x.Kernel, x.Kernel)
		return nil, r, nil
	}
	p, err := e.Build(src, x.Kernel)
	if err != nil {
		return nil, r, err
	}
	r.Compiled = true
	return p, r, nil
}

// CheckExercise runs x's check on the reader's code with the guards of Try: a deadline on every
// wait for the GPU (the floor, DeadlineFloor: a correct kernel of an exercise waits milliseconds),
// past which the process ends with the kernel named; a fault of the reader's kernel becomes a
// failed result whose reason names it (FaultVerdict) and its launch. In a notebook cell and in the
// grader's child process alike.
func (e *Env) CheckExercise(x Exercise, code string) (ExerciseResult, error) {
	var r ExerciseResult
	err := e.Guarded("kernel "+x.Kernel, 0, func() (err error) { r, err = x.Check(e, code); return err })
	var fe *gpu.FaultError
	if errors.As(err, &fe) {
		r.Compiled, r.Ran, r.Passed = true, true, false
		r.Reason = FaultVerdict(fe) + ". " + FaultMessage("kernel", fe, "")
		return r, nil
	}
	return r, err
}

// FaultVerdict is a fault in a few words, for a grade table: "illegal memory address in mul_mine".
func FaultVerdict(fe *gpu.FaultError) string {
	kind, _, _ := strings.Cut(fe.Kind, " (")
	kind = strings.TrimPrefix(strings.TrimPrefix(kind, "an "), "a ")
	if l, ok := fe.Suspect(); ok {
		return kind + " in " + l.Kernel
	}
	return kind
}

// Exercise shows exercise n of lesson l, checks code with the exercise's own check, and shows the
// outcome: the compile report, one line per shape checked, and the verdict with the timing.
func (e *Env) Exercise(l Lesson, n int, code string) error {
	x, err := l.ExerciseByNumber(n)
	if err != nil {
		return err
	}
	show.Markdown("**" + x.Title + ".** " + x.Task)
	r, err := e.CheckExercise(x, code)
	if err != nil {
		return err
	}
	if r.Log != "" {
		show.Error(errors.New(r.Log))
	}
	if r.Report.Kernel != "" {
		show.Reports("compile report of your kernel", []record.KernelReport{r.Report}).Display()
	}
	for _, c := range r.Checks {
		show.Note(show.Info, c)
	}
	kind := show.Success
	switch {
	case !r.Passed:
		kind = show.Warning
	case !r.Ran:
		kind = show.Info
	}
	msg := r.Reason
	if s := r.Speedup(); s > 0 {
		msg += fmt.Sprintf(" Yours %s, %s %s: %s.", r.Mine, r.RefName, r.Ref, show.Times(s))
	}
	show.Note(kind, msg)
	return nil
}

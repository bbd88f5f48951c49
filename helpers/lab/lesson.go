package lab

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// Lesson is what the reproduce command needs from a lesson: run everything on the GPU into a
// record.Run, then turn a run (this one, or a recorded one) into tables and figures.
type Lesson struct {
	ID    string // file names: results/<ID>.json, notebooks/<ID>.ipynb (unless Notebooks names others)
	Title string
	// Notebooks are the lesson's notebook files under notebooks/, in reading order, when it has more
	// than the one named after its ID (lesson 04: a softmax notebook and a layer norm notebook).
	Notebooks []string
	// Run measures every step and baseline. quick trades repetitions and sweep points for time:
	// every headline point of Plan is measured at the same shape either way.
	Run func(env *Env, quick bool) (*record.Run, error)
	// Plan lists the (case, shape) points Run measures on a GPU d, full or quick, from the sizes Run
	// itself takes: a quick plan has the full plan's headline points and a subset of its sweeps
	// (checked with no GPU against the recorded run, and after every reproduce run).
	Plan func(quick bool, d gpu.DeviceInfo) []Point
	// NotebookQuick says the lesson's notebook measures part of it quick (lesson 02's size sweep at
	// fewer points, to keep the page to one sitting). A run recorded from the notebook (make record,
	// then make adopt) then has the quick plan's points; one from make reproduce has the full plan's.
	NotebookQuick bool
	// Tables are the lesson's tables from a run: the article's numbers beside the run's.
	Tables func(run *record.Run) []show.Table
	// Figures are the lesson's charts from a run.
	Figures func(run *record.Run) ([]Figure, error)
	// Exercises are the lesson's exercises, numbered from 1 (exercise.go).
	Exercises []Exercise
	// Compare are the cases worth setting side by side across GPUs (the reproduce command's
	// -compare, notebook 00): the lesson's main table, not its sweeps.
	Compare []string
	// Article is the article's own table as records (Device names the article's GPU; the times,
	// and its % where it gives one), for the comparison; nil when the lesson has no article.
	Article func() []record.Record
	// Steps checks every step of the lesson (each named as its records name it) on a GPU: does its
	// source's declared need and its plan at the lesson's shape let it run there (CheckStep). Runs
	// skip the refused ones and record them (RefusedRecord); the doctor lists them.
	Steps func(d gpu.DeviceInfo) []StepCheck
}

// Figure is a named chart; the name is its file name without extension.
type Figure struct {
	Name string
	Plot *plot.Plot
}

// Results returns the lesson's run: measured now in the GPU mode, the recorded one otherwise.
// Notebook cells call this so that the same cell shows real numbers in either mode.
func (e *Env) Results(l Lesson, quick bool) (*record.Run, error) {
	if !e.GPU() {
		return e.recordedFor(l)
	}
	return l.Run(e, quick)
}

// recordedFor is the recorded run of l as the env's GPU would show it: under an emulated profile,
// without the steps the profile cannot run.
func (e *Env) recordedFor(l Lesson) (*record.Run, error) {
	run, err := e.Recorded(l.ID)
	if err != nil || e.Emulating() == "" {
		return run, err
	}
	return WithoutRefused(run, l.RefusedOn(e.Device())), nil
}

// Keep saves a run measured in a notebook cell so that later cells (each a new process) can show
// it again without measuring again.
func (e *Env) Keep(run *record.Run) error {
	path, err := keptPath(run.Lesson)
	if err != nil {
		return err
	}
	return run.Save(path)
}

// Last returns the run of a lesson that an earlier cell kept on this GPU, measuring it now when
// there is none; in the no-GPU mode it is the recorded run.
func (e *Env) Last(l Lesson, quick bool) (*record.Run, error) {
	if !e.GPU() {
		return e.recordedFor(l)
	}
	quick = quick || e.Quick
	if path, err := keptPath(l.ID); err == nil {
		if run, err := record.Load(path); err == nil && run.Receipt.Device.Name == e.Receipt.Device.Name && run.Receipt.Method == e.Receipt.Method {
			return run, nil
		}
	}
	run, err := l.Run(e, quick)
	if err != nil {
		return nil, err
	}
	return run, e.Keep(run)
}

func keptPath(lesson string) (string, error) {
	dir, err := KeptRunsDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, lesson+".json"), nil
}

// KeptRunsDir is the folder of the runs cells keep (Keep): runs/ beside the PTX cache, so
// $KERNELS_CACHE_DIR/runs when that is set.
func KeptRunsDir() (string, error) {
	dir, err := compile.CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(dir), "runs"), nil
}

// ErrNoRecord is returned by Shown in the no-GPU mode when the lesson has no recorded run; Shown has
// already said so in a note.
var ErrNoRecord = errors.New("no recorded run")

// Shown is the run of a lesson that a notebook cell shows: the one an earlier cell kept on this GPU
// (measured now when there is none), or the recorded one in the no-GPU mode. Without a recording it
// shows a note saying so (the kernels still compile) and returns ErrNoRecord.
func (e *Env) Shown(l Lesson) (*record.Run, error) {
	run, err := e.Last(l, false)
	if err != nil && !e.GPU() {
		show.Note(show.Info, "No recorded GPU run of this lesson is available yet ("+err.Error()+"); the kernels still compile.")
		return nil, ErrNoRecord
	}
	return run, err
}

// ShownOrNil is Shown for a cell that has nothing more to show without a run: after the note it is
// (nil, nil).
func (e *Env) ShownOrNil(l Lesson) (*record.Run, error) {
	run, err := e.Shown(l)
	if errors.Is(err, ErrNoRecord) {
		return nil, nil
	}
	return run, err
}

// ShowTable displays the table that table makes of the run shown for lesson l (Shown); without one
// it shows only Shown's note.
func (e *Env) ShowTable(l Lesson, table func(*record.Run) show.Table) error {
	run, err := e.ShownOrNil(l)
	if run == nil {
		return err
	}
	table(run).Display()
	return nil
}

// ShowFigures displays the figures of a run of lesson l: the named ones, or all when no name is given.
func (l Lesson) ShowFigures(run *record.Run, names ...string) error {
	figs, err := l.Figures(run)
	if err != nil {
		return err
	}
	return ShowPlots(figs, names...)
}

// ShowPlots displays figures: the named ones, or all when no name is given.
func ShowPlots(figs []Figure, names ...string) error {
	for _, f := range figs {
		if len(names) > 0 && !slices.Contains(names, f.Name) {
			continue
		}
		if err := show.Plot(f.Plot); err != nil {
			return err
		}
	}
	return nil
}

// NoRecording is how a cell that shows a lesson's results answers a failure to get them: in the
// no-GPU mode without a recorded run it says so in a note (a GPU would measure them) and returns
// nil; otherwise it returns err.
func (e *Env) NoRecording(err error) error {
	if e.GPU() {
		return err
	}
	show.Note(show.Warning, fmt.Sprintf("No recorded results to show (%v). On a GPU this cell measures them.", err))
	return nil
}

// ShowRun is a results cell: the tables made from the lesson's shown run (Shown: kept on this GPU,
// measured now, or recorded), then the named figures (none when no name is given). Without a
// recording it shows Shown's note and nothing else.
func (e *Env) ShowRun(l Lesson, tables func(run *record.Run) []show.Table, figures ...string) error {
	run, err := e.ShownOrNil(l)
	if run == nil {
		return err
	}
	for _, t := range tables(run) {
		t.Display()
	}
	if t, ok := RefusedTable(run); ok {
		t.Display()
	}
	if len(figures) == 0 {
		return nil
	}
	return l.ShowFigures(run, figures...)
}

// StepNamed finds among a lesson's steps, in order, the first called name or whose name is name
// and a space and more (a step's number: "3" finds "3 implicit GEMM"). The error names the lesson
// and lists the steps.
func StepNamed[S any](lesson string, steps []S, nameOf func(S) string, name string) (S, error) {
	var names []string
	for _, st := range steps {
		n := nameOf(st)
		if n == name || strings.HasPrefix(n, name+" ") {
			return st, nil
		}
		names = append(names, n)
	}
	var none S
	return none, fmt.Errorf("%s: no step %q (steps: %q)", lesson, name, names)
}

package lab

import (
	"gonum.org/v1/plot"

	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// Lesson is what the reproduce command needs from a lesson: run everything on the GPU into a
// record.Run, then turn a run (this one, or a recorded one) into tables and figures.
type Lesson struct {
	ID    string // file names: results/<ID>.json, notebooks/<ID>.ipynb
	Title string
	// Run measures every step and baseline. quick trades repetitions and sweep points for time.
	Run func(env *Env, quick bool) (*record.Run, error)
	// Tables are the lesson's tables from a run: the article's numbers beside the run's.
	Tables func(run *record.Run) []show.Table
	// Figures are the lesson's charts from a run.
	Figures func(run *record.Run) ([]Figure, error)
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
		return e.Recorded(l.ID)
	}
	return l.Run(e, quick)
}

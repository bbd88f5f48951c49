package grade

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// Verdict is the outcome of one exercise of one notebook.
type Verdict string

const (
	// Passed: the exercise's check passed on the GPU.
	Passed Verdict = "passed"
	// Failed: the check failed (it does not compile, the PTX shows the task is not done, or it is wrong on a shape).
	Failed Verdict = "FAILED"
	// NotRun: in the no-GPU mode, the kernel compiled and passed everything the check decides without
	// a GPU; whether it is correct, and its speed, need a GPU.
	NotRun Verdict = "compiled, not run (no GPU)"
	// Ungraded: the exercise's cell is missing, or its source cannot be read without running Go.
	Ungraded Verdict = "NOT GRADED"
)

// Row is one line of the grade table: one exercise of one notebook.
type Row struct {
	Notebook string  `json:"notebook"`
	Lesson   string  `json:"lesson"`
	Exercise int     `json:"exercise"`
	Title    string  `json:"title,omitempty"`
	Cell     int     `json:"cell,omitempty"` // from 1, as the notebook's cells come (markdown included)
	Verdict  Verdict `json:"verdict"`
	Reason   string  `json:"reason"`
	// Mine and Ref are the student's kernel and the reference step, timed in the same run on the GPU.
	Mine    bench.Timing `json:"mine"`
	Ref     bench.Timing `json:"ref"`
	RefName string       `json:"ref_name,omitempty"`
	Speedup float64      `json:"speedup,omitempty"` // Ref's median over Mine's; 0 when not timed
}

// OK reports whether the row is not a failure: passed, or compiled in the no-GPU mode.
func (r Row) OK() bool { return r.Verdict == Passed || r.Verdict == NotRun }

// Notebook grades the exercise cells of one notebook (its JSON in data; name labels the rows and
// tells the notebook's lesson when it contains a lesson's ID): one row per exercise cell found, in
// notebook order, and one per exercise that could not be graded. Only the exercises' checks run.
// An error is a failure to read the notebook or of the lab itself.
func Notebook(env *lab.Env, name string, data []byte, lessons []lab.Lesson) ([]Row, error) {
	found, problems, err := Find(name, data, lessons)
	if err != nil {
		return nil, err
	}
	var rows []Row
	for _, f := range found {
		x, err := f.Lesson.ExerciseByNumber(f.Number)
		if err != nil {
			return nil, err
		}
		row := Row{Notebook: name, Lesson: f.Lesson.ID, Exercise: f.Number, Title: x.Title, Cell: f.Cell}
		r, err := check(env, f.Lesson, x, f.Code)
		if err != nil {
			return nil, fmt.Errorf("%s, cell %d, %s: the check itself failed: %w", name, f.Cell, x.Title, err)
		}
		switch {
		case !r.Passed:
			row.Verdict = Failed
		case !r.Ran:
			row.Verdict = NotRun
		default:
			row.Verdict = Passed
		}
		row.Reason = r.Reason
		row.Mine, row.Ref, row.RefName, row.Speedup = r.Mine, r.Ref, r.RefName, r.Speedup()
		rows = append(rows, row)
	}
	for _, p := range problems {
		row := Row{Notebook: name, Lesson: p.Lesson, Exercise: p.Number, Cell: p.Cell, Verdict: Ungraded, Reason: p.Text}
		for _, l := range lessons {
			if l.ID == p.Lesson {
				if x, err := l.ExerciseByNumber(p.Number); err == nil {
					row.Title = x.Title
				}
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// Files grades every notebook at the paths given: a path is a notebook, or a folder whose notebooks
// (*.ipynb, at any depth, Jupyter's checkpoints left out) are graded in name order. It returns the
// rows, and the notebooks that gave none (no exercise cell, and no lesson ID in their name).
func Files(env *lab.Env, paths []string, lessons []lab.Lesson) (rows []Row, none []string, err error) {
	files, err := Notebooks(paths)
	if err != nil {
		return nil, nil, err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		r, err := Notebook(env, f, data, lessons)
		if err != nil {
			return nil, nil, err
		}
		if len(r) == 0 {
			none = append(none, f)
		}
		rows = append(rows, r...)
	}
	return rows, none, nil
}

// Notebooks expands paths (notebooks and folders of notebooks) into notebook files.
func Notebooks(paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("no notebook given: name notebooks (.ipynb) or folders of them")
	}
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		var inDir []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == ".ipynb_checkpoints" {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), ".ipynb") {
				inDir = append(inDir, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(inDir) == 0 {
			return nil, fmt.Errorf("%s: no notebook (.ipynb) in this folder", p)
		}
		sort.Strings(inDir)
		out = append(out, inDir...)
	}
	return out, nil
}

// Table is the grade table: notebook, exercise, verdict, speed against the reference step, reason.
// Its caption says which mode graded and what that mode could decide.
func Table(env *lab.Env, rows []Row) show.Table {
	t := show.Table{Title: "Grades", Header: []string{"notebook", "exercise", "result", "speed vs reference", "reason"}}
	for _, r := range rows {
		ex := fmt.Sprintf("%s #%d", r.Lesson, r.Exercise)
		if r.Lesson == "" {
			ex = "?"
		}
		if r.Cell > 0 {
			ex += fmt.Sprintf(" (cell %d)", r.Cell)
		}
		speed := ""
		if r.Speedup > 0 {
			speed = fmt.Sprintf("%s %s (yours %s, %s)", show.Times(r.Speedup), r.RefName, bench.FormatMS(r.Mine.Median), bench.FormatMS(r.Ref.Median))
		}
		t.Rows = append(t.Rows, []string{r.Notebook, ex, string(r.Verdict), speed, r.Reason})
	}
	passed, failed, notRun := Count(rows)
	t.Caption = fmt.Sprintf("%d passed, %d failed or not graded, %d compiled but not run. ", passed, failed, notRun)
	if env.GPU() {
		t.Caption += fmt.Sprintf("GPU mode on %s: every kernel was checked on fresh random inputs against the float64 reference and timed against the lesson's step (%s).",
			env.Receipt.Device.Name, env.Receipt.Method)
	} else {
		t.Caption += fmt.Sprintf("No-GPU mode (%v): kernels were compiled with NVRTC for %s and checked for what their PTX shows; "+
			"whether they are correct, and their speed, need a GPU: grade again on a GPU machine.", env.Why, env.Arch())
	}
	return t
}

// Count returns how many rows passed, failed (or could not be graded) and compiled without running.
func Count(rows []Row) (passed, failed, notRun int) {
	for _, r := range rows {
		switch r.Verdict {
		case Passed:
			passed++
		case NotRun:
			notRun++
		default:
			failed++
		}
	}
	return passed, failed, notRun
}

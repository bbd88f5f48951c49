// Command grade grades students' notebooks: it finds each notebook's exercise cells (the cells that
// call env.Exercise(<lesson package>.Lesson, N, mySource)), reads the CUDA source from the cell's
// raw string without running any of the cell's Go, runs the exercise's own check on it, and prints
// a table: notebook, exercise, result, speed against the lesson's reference step, and the reason.
//
//	go run ./cmd/grade notebooks/01_rwkv.ipynb              # or: make grade NB=notebooks/01_rwkv.ipynb
//	go run ./cmd/grade class/                               # every notebook in a folder, at any depth
//	go run ./cmd/grade -json grades.json class/ alice.ipynb
//	go run ./cmd/grade -students students.txt               # a hub's class: make grade ROSTER=students.txt
//
// With -students it grades every student of the instructor's roster (helpers/classroom's format,
// the one make hub reads) from the notebooks in their home, ~STUDENT/cudalessons, besides any paths
// given; the table gets a student column, a summary line per student follows it, and the gradebook
// is written as CSV and Markdown into the -gradebook folder (gradebook by default). A student whose
// folder is missing or holds no notebook to grade gets one row that says so.
//
// With a GPU (the default build) every kernel is checked against the float64 reference on fresh
// random inputs and timed; without one (the nocuda build, which make grade picks by itself) kernels
// are compiled and checked for what their PTX shows, and the table says that the rest needs a GPU.
//
// Exit status: 0 when no exercise failed (in the no-GPU mode: none failed what can be decided
// without a GPU); 1 when an exercise failed or could not be graded (its cell is missing, or its
// source is not a raw string literal), or a student of the roster has no notebooks to grade; 2 when
// the grading itself could not run (no notebook, a path that is not a notebook, NVRTC missing, a
// roster that cannot be read or names a student without a system account, a student's folder that
// cannot be read, a gradebook that cannot be written).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/cudalessons/cudalessons/helpers/classroom"
	"github.com/cudalessons/cudalessons/helpers/grade"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/rerun"
	"github.com/cudalessons/cudalessons/helpers/watchdog"
	"github.com/cudalessons/cudalessons/lessons"
)

// defaultGradebook is the gradebook's folder when -students is given without -gradebook.
const defaultGradebook = "gradebook"

func main() {
	grade.ServeChild(lessons.All())                           // on the GPU each exercise is checked in a child: this program again
	watchdog.OnInterrupt(func(os.Signal) { rerun.StopAll() }) // an interrupted grader leaves no child on the GPU
	jsonOut := flag.String("json", "", "also write the rows as JSON to this file (each with its student, with -students)")
	quick := flag.Bool("quick", false, "time with the quick method (fewer repetitions)")
	students := flag.String("students", "", "grade every student of this roster from ~STUDENT/"+classroom.Folder+" (the roster make hub reads)")
	book := flag.String("gradebook", "", "write the gradebook as DIR/"+grade.CSVFile+" and DIR/"+grade.MarkdownFile+" (with -students: "+defaultGradebook+" unless given)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: grade [-json grades.json] [-quick] [-students roster.txt] [-gradebook DIR] [notebook.ipynb|folder ...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 && *students == "" {
		fmt.Fprintln(os.Stderr, "grade: nothing to grade: name notebooks (.ipynb), folders of them, or a class's roster with -students")
		flag.Usage()
		os.Exit(2)
	}
	j := job{paths: flag.Args(), jsonOut: *jsonOut, gradebook: *book}
	if *students != "" {
		folders, err := rosterFolders(*students)
		if err != nil {
			fmt.Fprintln(os.Stderr, "grade:", err)
			os.Exit(2)
		}
		j.students = folders
		if j.gradebook == "" {
			j.gradebook = defaultGradebook
		}
	}
	env, err := lab.OpenWith(lab.Options{Quick: *quick})
	if err != nil {
		fmt.Fprintln(os.Stderr, "grade:", err)
		os.Exit(2)
	}
	code := run(env, j, os.Stdout, os.Stderr)
	env.Close()
	os.Exit(code)
}

// rosterFolders reads the roster at path and finds each student's notebook folder in their home.
func rosterFolders(path string) ([]grade.Folder, error) {
	roster, err := classroom.Load(path)
	if err != nil {
		return nil, err
	}
	dirs, err := roster.NotebookDirs()
	if err != nil {
		return nil, err
	}
	folders := make([]grade.Folder, len(dirs))
	for i, d := range dirs {
		folders[i] = grade.Folder{Student: d.Student, Dir: d.Dir}
	}
	return folders, nil
}

// job is what one run grades and writes.
type job struct {
	paths     []string       // notebooks and folders of notebooks, as the arguments give them
	students  []grade.Folder // each student's folder, in the roster's order; none without -students
	jsonOut   string         // the file of the rows as JSON; "" for none
	gradebook string         // the folder of the gradebook's files; "" for none
}

// run grades the notebooks at j's paths, then every student's folder, with every lesson's exercises;
// prints the table (with a student column and a summary when there are students) to stdout, writes
// the JSON and the gradebook j asks for, and returns the exit status (see the package comment).
func run(env *lab.Env, j job, stdout, stderr io.Writer) int {
	fmt.Fprintln(stdout, env.Banner())
	var marks []grade.Mark
	if len(j.paths) > 0 || len(j.students) == 0 {
		rows, none, err := grade.Files(env, j.paths, lessons.All())
		if err != nil {
			fmt.Fprintln(stderr, "grade:", err)
			return 2
		}
		for _, f := range none {
			fmt.Fprintf(stdout, "%s: no exercise cell (a notebook without exercises, or one whose exercise cells were all removed and whose name has no lesson ID)\n", f)
		}
		if len(rows) == 0 {
			fmt.Fprintln(stderr, "grade: no exercise cell found in", j.paths)
			return 1
		}
		for _, r := range rows {
			marks = append(marks, grade.Mark{Row: r})
		}
	}
	if len(j.students) > 0 {
		m, err := grade.Folders(env, j.students, lessons.All())
		if err != nil {
			fmt.Fprintln(stderr, "grade:", err)
			return 2
		}
		marks = append(marks, m...)
	}
	book := grade.NewGradebook(env, marks)
	fmt.Fprint(stdout, book.Table().Text())
	if len(j.students) > 0 {
		fmt.Fprint(stdout, book.SummaryTable().Text())
	}
	if j.jsonOut != "" {
		b, err := json.MarshalIndent(marks, "", "  ")
		if err == nil {
			err = os.WriteFile(j.jsonOut, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintln(stderr, "grade:", err)
			return 2
		}
	}
	if j.gradebook != "" {
		csvPath, mdPath, err := book.WriteFiles(j.gradebook)
		if err != nil {
			fmt.Fprintln(stderr, "grade:", err)
			return 2
		}
		fmt.Fprintf(stdout, "Gradebook: %s and %s\n", csvPath, mdPath)
	}
	if _, failed, _ := grade.Count(book.Rows()); failed > 0 {
		return 1
	}
	return 0
}

// Command grade grades students' notebooks: it finds each notebook's exercise cells (the cells that
// call env.Exercise(<lesson package>.Lesson, N, mySource)), reads the CUDA source from the cell's
// raw string without running any of the cell's Go, runs the exercise's own check on it, and prints
// a table: notebook, exercise, result, speed against the lesson's reference step, and the reason.
//
//	go run ./cmd/grade notebooks/01_rwkv.ipynb              # or: make grade NB=notebooks/01_rwkv.ipynb
//	go run ./cmd/grade class/                               # every notebook in a folder, at any depth
//	go run ./cmd/grade -json grades.json class/ alice.ipynb
//
// With a GPU (the default build) every kernel is checked against the float64 reference on fresh
// random inputs and timed; without one (the nocuda build, which make grade picks by itself) kernels
// are compiled and checked for what their PTX shows, and the table says that the rest needs a GPU.
//
// Exit status: 0 when no exercise failed (in the no-GPU mode: none failed what can be decided
// without a GPU); 1 when an exercise failed or could not be graded (its cell is missing, or its
// source is not a raw string literal); 2 when the grading itself could not run (no notebook, a file
// that is not a notebook, NVRTC missing).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/cudalessons/cudalessons/helpers/grade"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons"
)

func main() {
	jsonOut := flag.String("json", "", "also write the rows as JSON to this file")
	quick := flag.Bool("quick", false, "time with the quick method (fewer repetitions)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: grade [-json grades.json] [-quick] notebook.ipynb|folder ...")
		flag.PrintDefaults()
	}
	flag.Parse()
	env, err := lab.OpenWith(lab.Options{Quick: *quick})
	if err != nil {
		fmt.Fprintln(os.Stderr, "grade:", err)
		os.Exit(2)
	}
	code := run(env, flag.Args(), *jsonOut, os.Stdout, os.Stderr)
	env.Close()
	os.Exit(code)
}

// run grades the notebooks at paths with every lesson's exercises, prints the table to stdout and
// returns the exit status (see the package comment).
func run(env *lab.Env, paths []string, jsonOut string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stdout, env.Banner())
	rows, err := grade.Files(env, paths, lessons.All())
	if err != nil {
		fmt.Fprintln(stderr, "grade:", err)
		return 2
	}
	if len(rows) == 0 {
		fmt.Fprintln(stderr, "grade: no exercise cell found in", paths)
		return 1
	}
	fmt.Fprint(stdout, grade.Table(env, rows).Text())
	if jsonOut != "" {
		b, err := json.MarshalIndent(rows, "", "  ")
		if err == nil {
			err = os.WriteFile(jsonOut, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintln(stderr, "grade:", err)
			return 2
		}
	}
	if _, failed, _ := grade.Count(rows); failed > 0 {
		return 1
	}
	return 0
}

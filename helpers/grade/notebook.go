// Package grade finds the exercise cells of a student's notebook and grades them with each
// exercise's own check (lab.Exercise.Check). It reads the cells' Go with go/parser and never runs
// it: the only code that runs is the exercise kernels, built and checked by the lesson's check.
//
// An exercise cell holds the CUDA source in a Go raw string and hands it to Env.Exercise:
//
//	var myShared = `extern "C" __global__ void ex1_shared(...) { ... }`
//
//	%%
//	lab.Cell(func(env *lab.Env) error { return env.Exercise(rwkv.Lesson, 1, myShared) })
//
// The lesson is found from the package the call names (rwkv): by the package's import path among
// the lessons given (lessons.All()), or else by the lesson's ID ("01_rwkv"). So every lesson that
// lists its exercises in lab.Lesson.Exercises is graded without changes here.
package grade

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/lab"
)

// Found is an exercise cell of a notebook: where it is, the exercise it calls, and the CUDA source
// it hands over (the raw string's contents, unchanged).
type Found struct {
	Cell   int // the cell's position in the notebook, from 1 (markdown cells count)
	Lesson lab.Lesson
	Number int
	Var    string // the identifier passed to Env.Exercise, or "" for a raw string written in the call
	Code   string
}

// Problem is an exercise cell (or an exercise) that could not be graded, and why.
type Problem struct {
	Cell   int    // from 1; 0 when no cell is concerned (an exercise with no cell)
	Lesson string // the lesson's ID, when known
	Number int    // the exercise's number, when known
	Text   string
}

// Cells are a notebook's cells as the JSON has them.
type notebook struct {
	Cells []struct {
		Type   string          `json:"cell_type"`
		Source json.RawMessage `json:"source"` // a string or a list of strings
	} `json:"cells"`
}

// source joins a cell's source, which nbformat stores as a string or as a list of lines.
func source(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var lines []string
	if err := json.Unmarshal(raw, &lines); err != nil {
		return "", fmt.Errorf("a cell's source is neither a string nor a list of strings: %w", err)
	}
	return strings.Join(lines, ""), nil
}

// goCell is a code cell's Go, parsed.
type goCell struct {
	pos  int // from 1
	src  string
	file *ast.File // nil when the Go does not parse
	err  error     // the parse error
}

// callText spots an exercise call in a cell whose Go does not parse: rwkv.Lesson, 1.
var callText = regexp.MustCompile(`\.Exercise\(\s*(\w+)\.Lesson\s*,\s*(\d+)`)

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// Find reads a notebook's JSON and returns its exercise cells, in notebook order, and the problems
// that kept a cell from being graded: a call whose source is not a raw string literal, or names a
// variable no cell declares, a lesson or an exercise that does not exist. The lessons of the
// notebook are those its calls name and the one whose ID, or one of whose notebooks, the notebook's
// name contains (a notebook that only imports a lesson's package, to show its tables, is not doing
// its exercises); each of their exercises held by this notebook that no cell calls is a Problem too
// (the cell is missing, or was changed so that it no longer calls Env.Exercise).
func Find(name string, nbJSON []byte, lessons []lab.Lesson) ([]Found, []Problem, error) {
	var nb notebook
	if err := json.Unmarshal(nbJSON, &nb); err != nil {
		return nil, nil, fmt.Errorf("%s is not a notebook (JSON with cells): %w", name, err)
	}
	var cells []goCell
	for i, c := range nb.Cells {
		if c.Type != "code" {
			continue
		}
		src, err := source(c.Source)
		if err != nil {
			return nil, nil, fmt.Errorf("%s, cell %d: %w", name, i+1, err)
		}
		f, err := parseCell(src)
		if err != nil {
			f = nil
		}
		cells = append(cells, goCell{pos: i + 1, src: src, file: f, err: err})
	}
	var found []Found
	var problems []Problem
	// involved: the lessons of this notebook, each with the notebook file whose exercises it must
	// hold ("" for all of the lesson's exercises).
	involved := map[string]string{}
	involve := func(l lab.Lesson, nb string) {
		if old, ok := involved[l.ID]; !ok || old != "" {
			involved[l.ID] = nb
		}
	}
	for _, l := range lessons {
		if nb, ok := l.NotebookIn(name); ok && len(l.NotebookFiles()) > 1 {
			involve(l, nb)
		} else if l.ID != "" && strings.Contains(name, l.ID) {
			involve(l, "")
		}
	}
	for ci, c := range cells {
		if c.err != nil {
			// A cell whose Go does not parse may be an exercise cell: say so rather than miss it.
			if m := callText.FindStringSubmatch(c.src); m != nil {
				p := Problem{Cell: c.pos, Text: "its Go does not parse, so the grader cannot read its exercise: " + c.err.Error()}
				if l, ok := lessonOf(m[1], "", lessons); ok {
					p.Lesson, p.Number = l.ID, atoi(m[2])
					involve(l, exerciseNotebook(l, p.Number))
				}
				problems = append(problems, p)
			}
			continue
		}
		imports := importsOf(c.file)
		ast.Inspect(c.file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Exercise" || len(call.Args) != 3 {
				return true
			}
			f, p, ok := exerciseCall(cells, ci, imports, call, lessons)
			if !ok {
				return true
			}
			if f.Lesson.ID != "" {
				involve(f.Lesson, exerciseNotebook(f.Lesson, f.Number))
			}
			if p != nil {
				problems = append(problems, *p)
				return true
			}
			found = append(found, f)
			return true
		})
	}
	// Every exercise of the notebook's lessons that no cell calls.
	for _, l := range lessons {
		nb, ok := involved[l.ID]
		if !ok {
			continue
		}
		for _, x := range l.Exercises {
			if nb != "" && l.ExerciseNotebook(x) != nb {
				continue // its cell is in another of the lesson's notebooks
			}
			seen := false
			for _, f := range found {
				seen = seen || (f.Lesson.ID == l.ID && f.Number == x.Number)
			}
			for _, p := range problems {
				seen = seen || (p.Lesson == l.ID && p.Number == x.Number)
			}
			if !seen {
				problems = append(problems, Problem{Lesson: l.ID, Number: x.Number, Text: fmt.Sprintf(
					"no cell calls env.Exercise(%s.Lesson, %d, ...): the exercise cell is missing, or no longer calls Env.Exercise",
					packageName(l), x.Number)})
			}
		}
	}
	return found, problems, nil
}

// exerciseNotebook is the notebook that holds exercise n of lesson l (its first notebook when l
// has no such exercise): a notebook that calls one of its exercises must hold that notebook's others.
func exerciseNotebook(l lab.Lesson, n int) string {
	if x, err := l.ExerciseByNumber(n); err == nil {
		return l.ExerciseNotebook(x)
	}
	return l.NotebookFiles()[0]
}

// parseCell parses a GoNB cell's Go after blanking GoNB's own lines (%% and other % magics, !
// shell lines), keeping line numbers: the declarations before %% as a file, the statements after it
// as the body of a function.
func parseCell(src string) (*ast.File, error) {
	lines := strings.Split(src, "\n")
	body := -1
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "%%"):
			if body < 0 {
				body = i
			}
			lines[i] = ""
		case strings.HasPrefix(t, "%"), strings.HasPrefix(t, "!"):
			lines[i] = ""
		}
	}
	code := "package cell;" + strings.Join(lines, "\n")
	if body >= 0 {
		code = "package cell;" + strings.Join(lines[:body], "\n") + "\nfunc main() {" + strings.Join(lines[body:], "\n") + "\n}"
	}
	return parser.ParseFile(token.NewFileSet(), "cell.go", code, parser.SkipObjectResolution)
}

// importsOf maps a cell's import names to paths.
func importsOf(f *ast.File) map[string]string {
	m := map[string]string{}
	for _, im := range f.Imports {
		path, err := strconv.Unquote(im.Path.Value)
		if err != nil {
			continue
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		m[name] = path
	}
	return m
}

// exerciseCall reads a call x.Exercise(pkg.Lesson, N, source). ok is false when the call is not an
// exercise call at all (its first argument is not <pkg>.Lesson); otherwise either Found is filled
// or the Problem says why it cannot be graded.
func exerciseCall(cells []goCell, ci int, imports map[string]string, call *ast.CallExpr, lessons []lab.Lesson) (Found, *Problem, bool) {
	pos := cells[ci].pos
	lsel, ok := call.Args[0].(*ast.SelectorExpr)
	if !ok || lsel.Sel.Name != "Lesson" {
		return Found{}, nil, false
	}
	pkg, ok := lsel.X.(*ast.Ident)
	if !ok {
		return Found{}, nil, false
	}
	f := Found{Cell: pos}
	fail := func(format string, a ...any) (Found, *Problem, bool) {
		return f, &Problem{Cell: pos, Lesson: f.Lesson.ID, Number: f.Number, Text: fmt.Sprintf(format, a...)}, true
	}
	l, ok := lessonOf(pkg.Name, imports[pkg.Name], lessons)
	if !ok {
		return fail("env.Exercise(%s.Lesson, ...): no lesson has the package %s (import %q)", pkg.Name, pkg.Name, imports[pkg.Name])
	}
	f.Lesson = l
	num, ok := call.Args[1].(*ast.BasicLit)
	if !ok || num.Kind != token.INT {
		return fail("env.Exercise(%s.Lesson, ...): the exercise's number must be written as a number (1, 2, ...)", pkg.Name)
	}
	n, err := strconv.Atoi(num.Value)
	if err != nil {
		return fail("env.Exercise(%s.Lesson, %s, ...): %v", pkg.Name, num.Value, err)
	}
	f.Number = n
	if _, err := l.ExerciseByNumber(n); err != nil {
		return fail("%v", err)
	}
	switch arg := call.Args[2].(type) {
	case *ast.BasicLit:
		code, err := rawString(arg)
		if err != nil {
			return fail("env.Exercise(%s.Lesson, %d, ...): the source %v", pkg.Name, n, err)
		}
		f.Code = code
	case *ast.Ident:
		f.Var = arg.Name
		lit, where := declaration(cells, ci, arg.Name)
		if where == 0 {
			return fail("env.Exercise(%s.Lesson, %d, %s): no cell declares %s (was the variable renamed?); the grader reads the source from the raw string of var %s = `...`", pkg.Name, n, arg.Name, arg.Name, arg.Name)
		}
		code, err := rawString(lit)
		if err != nil {
			return fail("%s (cell %d) %v", arg.Name, where, err)
		}
		f.Code = code
	default:
		return fail("env.Exercise(%s.Lesson, %d, ...): the source must be a variable holding a raw string literal (`...`), so the grader can read it without running Go", pkg.Name, n)
	}
	return f, nil, true
}

// rawString returns a raw string literal's contents, or why the expression is not one.
func rawString(e ast.Expr) (string, error) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", fmt.Errorf("is not a raw string literal (`...`): it is computed by Go code, which the grader does not run")
	}
	if !strings.HasPrefix(lit.Value, "`") {
		return "", fmt.Errorf("is an interpreted string (\"...\"), not a raw string literal (`...`): write the CUDA source between backquotes")
	}
	return lit.Value[1 : len(lit.Value)-1], nil
}

// declaration finds the value of `var name = ...` (or name := ... in a function) in the cells: the
// last declaration in the cell of the call or before it (GoNB keeps declarations from cell to
// cell), else the first after it. It returns the expression and its cell's position (0: none).
func declaration(cells []goCell, ci int, name string) (ast.Expr, int) {
	order := []int{}
	for i := ci; i >= 0; i-- {
		order = append(order, i)
	}
	for i := ci + 1; i < len(cells); i++ {
		order = append(order, i)
	}
	for _, i := range order {
		if cells[i].file == nil {
			continue
		}
		var found ast.Expr
		ast.Inspect(cells[i].file, func(n ast.Node) bool {
			switch d := n.(type) {
			case *ast.ValueSpec:
				for j, id := range d.Names {
					if id.Name == name && j < len(d.Values) {
						found = d.Values[j]
					}
				}
			case *ast.AssignStmt:
				for j, lhs := range d.Lhs {
					if id, ok := lhs.(*ast.Ident); ok && id.Name == name && j < len(d.Rhs) && len(d.Lhs) == len(d.Rhs) {
						found = d.Rhs[j]
					}
				}
			}
			return true
		})
		if found != nil {
			return found, cells[i].pos
		}
	}
	return nil, 0
}

// lessonOf finds the lesson of a package: by its import path, or else by its name against the
// lessons' IDs ("rwkv" for "01_rwkv").
func lessonOf(name, path string, lessons []lab.Lesson) (lab.Lesson, bool) {
	if path != "" {
		for _, l := range lessons {
			if PackagePath(l) == path {
				return l, true
			}
		}
	}
	for _, l := range lessons {
		if l.ID == name || strings.HasSuffix(l.ID, "_"+name) {
			return l, true
		}
	}
	return lab.Lesson{}, false
}

// PackagePath is the import path of the package that defines a lesson, read from its functions
// (Run, or an exercise's Check), or "" when it has none.
func PackagePath(l lab.Lesson) string {
	var fns []any
	if l.Run != nil {
		fns = append(fns, l.Run)
	}
	for _, x := range l.Exercises {
		if x.Check != nil {
			fns = append(fns, x.Check)
		}
	}
	for _, fn := range fns {
		f := runtime.FuncForPC(reflect.ValueOf(fn).Pointer())
		if f == nil {
			continue
		}
		full := f.Name() // github.com/x/y/lessons/rwkv.Run, or ...rwkv.init.func1
		slash := strings.LastIndex(full, "/")
		if dot := strings.Index(full[slash+1:], "."); dot >= 0 {
			return full[:slash+1+dot]
		}
	}
	return ""
}

// packageName is the last element of a lesson's package path, or the lesson's ID without its number.
func packageName(l lab.Lesson) string {
	if p := PackagePath(l); p != "" {
		return p[strings.LastIndex(p, "/")+1:]
	}
	if _, after, ok := strings.Cut(l.ID, "_"); ok {
		return after
	}
	return l.ID
}

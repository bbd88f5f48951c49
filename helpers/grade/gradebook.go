package grade

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// NoNotebooks is the result of the one row of a student who has nothing to grade: no folder, no
// notebook in it, or no notebook with an exercise cell. Count counts it with the failures, so a
// class where someone handed in nothing does not grade as all passed.
const NoNotebooks Verdict = "no notebooks"

// Folder is one student's folder of notebooks, as a gradebook grades it.
type Folder struct {
	Student string // the student's name, as the roster has it
	Dir     string // the folder; it may not exist
}

// Mark is one row of a gradebook: a row of one of a student's notebooks, or the one row of a
// student with nothing to grade (Verdict NoNotebooks). Student is empty for notebooks graded from
// paths rather than from a student's folder; in JSON a Mark is its Row with a "student" field.
type Mark struct {
	Student string `json:"student,omitempty"`
	Row
}

// Folders grades every student's folder: each notebook (*.ipynb, at any depth, as Notebooks finds
// them) with every exercise of the lessons, and returns the marks in the folders' order, each
// notebook named by its path in the student's folder. A student with no folder, no notebook, or no
// notebook with an exercise cell gets one NoNotebooks mark that says which; a file that is not a
// notebook gets an Ungraded mark. An error is a folder that cannot be read (run the grader as a
// user who can read the students' homes) or a failure of the lab itself.
func Folders(env *lab.Env, folders []Folder, lessons []lab.Lesson) ([]Mark, error) {
	var marks []Mark
	for _, f := range folders {
		m, err := folder(env, f, lessons)
		if err != nil {
			return nil, fmt.Errorf("grading %s's notebooks in %s: %w", f.Student, f.Dir, err)
		}
		marks = append(marks, m...)
	}
	return marks, nil
}

// folder grades one student's folder.
func folder(env *lab.Env, f Folder, lessons []lab.Lesson) ([]Mark, error) {
	nothing := func(reason string) []Mark {
		return []Mark{{Student: f.Student, Row: Row{Verdict: NoNotebooks, Reason: reason}}}
	}
	st, err := os.Stat(f.Dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nothing(fmt.Sprintf("%s does not exist (the student has not opened the hub yet, or removed the folder)", f.Dir)), nil
	case err != nil:
		return nil, err
	case !st.IsDir():
		return nothing(fmt.Sprintf("%s is not a folder", f.Dir)), nil
	}
	files, err := Notebooks([]string{f.Dir})
	if err != nil {
		// Notebooks reports a folder it cannot read as a *fs.PathError, and an empty one otherwise.
		if pe := new(fs.PathError); errors.As(err, &pe) {
			return nil, err
		}
		return nothing(fmt.Sprintf("no notebook (.ipynb) in %s", f.Dir)), nil
	}
	var marks []Mark
	var none []string
	for _, file := range files {
		name, err := filepath.Rel(f.Dir, file)
		if err != nil {
			return nil, err
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		// A file the student broke is that student's row, not the end of the class's grading.
		if _, _, err := Find(name, data, lessons); err != nil {
			marks = append(marks, Mark{Student: f.Student, Row: Row{Notebook: name, Verdict: Ungraded, Reason: err.Error()}})
			continue
		}
		rows, err := Notebook(env, name, data, lessons)
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			none = append(none, name)
		}
		for _, r := range rows {
			marks = append(marks, Mark{Student: f.Student, Row: r})
		}
	}
	if len(marks) == 0 {
		return nothing(fmt.Sprintf("none of the notebooks in %s has an exercise cell (%s)", f.Dir, strings.Join(none, ", "))), nil
	}
	return marks, nil
}

// Gradebook is a class's grades: every mark, when and in which mode they were graded, and what that
// mode could decide. NewGradebook makes one (its marks are not to change after); WriteCSV,
// WriteMarkdown and WriteFiles write it.
type Gradebook struct {
	Date   time.Time // when it was graded
	Banner string    // the env's banner: the mode, and the GPU or the recorded run
	Marks  []Mark

	table show.Table // Table's cells for the marks, and its caption
}

// NewGradebook makes the gradebook of marks graded in env, dated now. Each mark's exercise, result
// and speed are written as Table writes them.
func NewGradebook(env *lab.Env, marks []Mark) *Gradebook {
	g := &Gradebook{Date: time.Now(), Banner: env.Banner(), Marks: marks}
	t := Table(env, g.Rows())
	missing, class := 0, 0
	for i, m := range marks {
		if m.Verdict == NoNotebooks { // a student's only mark
			t.Rows[i][1] = "" // no exercise, rather than Table's "?"
			missing++
		}
	}
	for _, s := range students(marks) {
		if s != "" {
			class++
		}
	}
	if missing > 0 {
		t.Caption = fmt.Sprintf("Students with no notebooks to grade: %d of %d. %s", missing, class, t.Caption)
	}
	g.table = t
	return g
}

// Rows are the marks' rows, for Count.
func (g *Gradebook) Rows() []Row {
	rows := make([]Row, len(g.Marks))
	for i, m := range g.Marks {
		rows[i] = m.Row
	}
	return rows
}

// Header is the gradebook's columns, in CSV and Markdown: the student, then Table's.
func (g *Gradebook) Header() []string {
	return append([]string{"student"}, g.table.Header...)
}

// cells are the mark's row of the gradebook, in Header's columns.
func (g *Gradebook) cells(i int) []string {
	return append([]string{g.Marks[i].Student}, g.table.Rows[i]...)
}

// Table is the grade table with a student column first (left out when no mark has a student, so
// that notebooks graded from paths print as Table prints them), and Table's caption.
func (g *Gradebook) Table() show.Table {
	t := g.table
	if s := students(g.Marks); len(s) == 0 || (len(s) == 1 && s[0] == "") {
		return t
	}
	t.Header = g.Header()
	t.Rows = make([][]string, len(g.Marks))
	for i := range g.Marks {
		t.Rows[i] = g.cells(i)
	}
	return t
}

// Tally is one student's line of the gradebook's summary.
type Tally struct {
	Student   string // "" for the notebooks graded from paths
	Notebooks int    // the notebooks that gave a row
	// Passed, Failed (or not graded) and NotRun count the student's exercises as Count does; a
	// NoNotebooks row counts in none of them.
	Passed, Failed, NotRun int
	Note                   string // for a student with nothing to grade, why (NoNotebooks' reason)
}

// Summary tallies each student's marks, in the order the students first appear.
func (g *Gradebook) Summary() []Tally {
	var out []Tally
	for _, s := range students(g.Marks) {
		t := Tally{Student: s}
		var rows []Row
		seen := map[string]bool{}
		for _, m := range g.Marks {
			switch {
			case m.Student != s:
			case m.Verdict == NoNotebooks:
				t.Note = m.Reason
			default:
				rows = append(rows, m.Row)
				if !seen[m.Notebook] {
					seen[m.Notebook] = true
					t.Notebooks++
				}
			}
		}
		t.Passed, t.Failed, t.NotRun = Count(rows)
		out = append(out, t)
	}
	return out
}

// byPath labels, in the summary, the notebooks graded from paths rather than from a student's folder.
const byPath = "(notebooks given as paths)"

// SummaryTable is Summary as a table: per student, notebooks, passed, failed or not graded,
// compiled but not run, and a note for a student with nothing to grade.
func (g *Gradebook) SummaryTable() show.Table {
	t := show.Table{Title: "Summary", Header: []string{"student", "notebooks", "passed", "failed or not graded", "compiled, not run", "note"}}
	for _, s := range g.Summary() {
		who := s.Student
		if who == "" {
			who = byPath
		}
		note := ""
		if s.Note != "" {
			note = string(NoNotebooks) + ": " + s.Note
		}
		t.Rows = append(t.Rows, []string{who, strconv.Itoa(s.Notebooks), strconv.Itoa(s.Passed), strconv.Itoa(s.Failed), strconv.Itoa(s.NotRun), note})
	}
	return t
}

// students are the marks' students, in the order they first appear.
func students(marks []Mark) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range marks {
		if !seen[m.Student] {
			seen[m.Student] = true
			out = append(out, m.Student)
		}
	}
	return out
}

// WriteCSV writes the gradebook as CSV: a header row (Header), then one row per mark. A cell that a
// spreadsheet would take for a formula (it starts with =, +, -, @, a tab or a carriage return: a
// student names their notebooks) is written with a leading apostrophe.
func (g *Gradebook) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(g.Header()); err != nil {
		return fmt.Errorf("writing the gradebook as CSV: %w", err)
	}
	for i := range g.Marks {
		cells := g.cells(i)
		for j, c := range cells {
			if c != "" && strings.ContainsRune("=+-@\t\r", rune(c[0])) {
				cells[j] = "'" + c
			}
		}
		if err := cw.Write(cells); err != nil {
			return fmt.Errorf("writing the gradebook as CSV: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing the gradebook as CSV: %w", err)
	}
	return nil
}

// mdEscape makes text safe in a Markdown table cell: the characters Markdown would read as markup
// are escaped, and line breaks become <br>.
var mdEscape = strings.NewReplacer(`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"<", `\<`, ">", `\>`, "|", `\|`, "\r\n", "<br>", "\n", "<br>", "\r", "<br>")

// markdown is a table with every cell, and the caption, escaped for Markdown.
func markdown(t show.Table) string {
	esc := show.Table{Header: t.Header, Caption: mdEscape.Replace(t.Caption)}
	for _, r := range t.Rows {
		row := make([]string, len(r))
		for i, c := range r {
			row[i] = mdEscape.Replace(c)
		}
		esc.Rows = append(esc.Rows, row)
	}
	return esc.Markdown()
}

// WriteMarkdown writes the gradebook as Markdown: a title with the date, the banner, the summary (a
// line per student) and the grades (a line per mark, with the caption that says what the mode
// decided).
func (g *Gradebook) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Gradebook, %s\n\n%s\n\n", g.Date.Format("2006-01-02 15:04 MST"), mdEscape.Replace(g.Banner))
	fmt.Fprintf(&b, "## Summary\n\n%s\n## Grades\n\n", markdown(g.SummaryTable()))
	t := g.table
	t.Header, t.Rows = g.Header(), nil
	for i := range g.Marks {
		t.Rows = append(t.Rows, g.cells(i))
	}
	b.WriteString(markdown(t))
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing the gradebook as Markdown: %w", err)
	}
	return nil
}

// The files WriteFiles writes in its folder.
const (
	CSVFile      = "gradebook.csv"
	MarkdownFile = "gradebook.md"
)

// WriteFiles writes the gradebook into dir (made if missing) as CSVFile and MarkdownFile and returns
// their paths. The folder and files it creates are its owner's only: the students have accounts on
// the machine.
func (g *Gradebook) WriteFiles(dir string) (csvPath, mdPath string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("gradebook: %w", err)
	}
	var c, m bytes.Buffer
	if err := g.WriteCSV(&c); err != nil {
		return "", "", err
	}
	if err := g.WriteMarkdown(&m); err != nil {
		return "", "", err
	}
	csvPath, mdPath = filepath.Join(dir, CSVFile), filepath.Join(dir, MarkdownFile)
	for _, f := range []struct {
		path string
		data []byte
	}{{csvPath, c.Bytes()}, {mdPath, m.Bytes()}} {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return "", "", fmt.Errorf("gradebook: %w", err)
		}
	}
	return csvPath, mdPath, nil
}

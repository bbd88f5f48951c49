package lab

import (
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// Trial is one step of a lesson as a notebook cell lets a reader edit it: the step's kernel source,
// copied into a Go raw string and changed, is compiled, checked and timed against the original step
// in the same run. Every lesson builds its Trials from its own steps (vecadd.Try, rwkv.Try,
// oneflow.Try); Env.Try runs them all the same way.
type Trial struct {
	Step   string // the step's name, as the lesson's tables write it
	Lesson string // the lesson's ID, for the recorded run in the no-GPU mode
	// Compile compiles code in place of the step's source (the step's own file when code is empty)
	// and returns the compile reports of its kernels at the launch the check uses. No GPU needed.
	Compile func(code string) ([]record.KernelReport, error)
	// Measure (GPU mode) checks code (the original when empty) on fresh random inputs with
	// NaN-poisoned outputs against the float64 reference, then times it: one record per case (a
	// dtype, a direction), in the same order whatever the code. A wrong result is an error that
	// names the case and what failed.
	Measure func(code string) ([]record.Record, error)
	// Recorded returns the original step's records in a recorded run (shown in the no-GPU mode).
	Recorded func(run *record.Run) []record.Record
	// Close releases what Measure allocated; nil when there is nothing to release.
	Close func()
	// Original is the step's own source as a notebook cell copies it (OriginalOf), so that Try can
	// tell a reader's edit from the unchanged copy (Unedited); "" when the lesson does not give it.
	Original string
}

// OriginalOf is a Trial's Original: the text of file in a lesson's kernel folder, "" when the
// folder has no such file (the step's Compile then names the missing file).
func OriginalOf(dir compile.Files, file string) string {
	src, err := dir.Source(file)
	if err != nil {
		return ""
	}
	return src.Code
}

// Unedited reports whether code leaves a step as it is: empty, or the step's original source
// (original) with at most white space changed at the ends of its lines and of the whole. A Try of
// unedited code shows the step as Walk does, with no comparison of the step with itself.
func Unedited(code, original string) bool {
	c := normalized(code)
	return c == "" || original != "" && c == normalized(original)
}

// normalized is code without trailing white space on any line, nor blank lines at either end.
func normalized(code string) string {
	lines := strings.Split(strings.ReplaceAll(code, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// InviteEdit is the line a Try of unedited code ends with: what the reader can do with the cell.
func InviteEdit(step string) string {
	return "This is " + step + " as the lesson has it. Edit the kernel in the cell above and run the cell again: your version is then checked and timed beside this one."
}

// InviteAfter shows InviteEdit(step) when invite is set and the Try it ends returned no error (*err
// is nil): a lesson's own Try defers it with its named error result.
func InviteAfter(invite bool, step string, err *error) {
	if invite && *err == nil {
		show.Note(show.Info, InviteEdit(step))
	}
}

// ReaderCode is the code a lesson's own Try runs in place of step's source: "" for unedited code
// (Unedited), with invite true when the reader's cell held an unchanged copy, so that the Try shows
// the step alone and ends with InviteEdit.
func ReaderCode(code, original string) (mine string, invite bool) {
	if Unedited(code, original) {
		return "", strings.TrimSpace(code) != ""
	}
	return code, false
}

// Try compiles code in place of the trial's step and shows its compile report; in the GPU mode it
// then checks and times the original step and the reader's code in the same run and shows them
// side by side, the reader's speedup over the original first. Code that leaves the step unedited
// (empty, or the step's source unchanged: Unedited) shows the original step alone, as Walk does,
// and then a line inviting the reader to edit it. In the no-GPU mode it shows the
// original's recorded numbers and says that running needs a GPU. A compile error or a wrong result
// is shown, not returned as a failure of the lab: the reader fixes the kernel and reruns.
//
// The reader's code runs with a deadline on every wait for the GPU, derived from the original's
// time in the same run (Guarded): a kernel that never ends is named and its process ended, so that
// the GPU is freed. A fault of the reader's kernel is named with its launch (FaultMessage). Before
// anything is loaded, the reader's source is assembled for the GPU's real architecture, so that
// static shared memory over the limit is named with the limits, in both modes.
func (e *Env) Try(t Trial, code string) (err error) {
	if t.Close != nil {
		defer t.Close()
	}
	code, invite := ReaderCode(code, t.Original)
	defer InviteAfter(invite, t.Step, &err)
	if code != "" {
		// A step this GPU cannot run is refused whatever the reader wrote: the original's declared
		// need decides (a copy of the source in a cell may lack the line).
		if _, err := t.Compile(""); IsRefusal(err) {
			return err
		}
	}
	mark := len(e.built)
	var reps []record.KernelReport
	err = e.asReader(code != "", func() (err error) { reps, err = t.Compile(code); return err })
	if err != nil {
		return err // a *compile.Error (the log with the source lines) or a *LimitError
	}
	who := "the original " + t.Step
	if code != "" {
		who = "your " + t.Step
	}
	show.Reports("compile report of "+who, reps).Display()
	e.showBuiltSASS(mark) // collapsed: the machine code of what was just compiled
	if !e.GPU() {
		if run, err := e.Recorded(t.Lesson); err == nil && t.Recorded != nil {
			if recs := t.Recorded(run); len(recs) > 0 {
				show.Records("recorded: the original "+t.Step, recs, run.Receipt).Display()
			}
		}
		show.Note(show.Info, fmt.Sprintf("%s compiled. Checking and timing it needs a GPU (%s); the recorded numbers of the original step are above.", capital(who), e.Mode))
		return nil
	}
	orig, err := t.Measure("")
	if err != nil {
		return fmt.Errorf("the original %s: %w", t.Step, err)
	}
	if code == "" {
		show.Records("the original "+t.Step, orig, e.Receipt).Display()
		return nil
	}
	var mine []record.Record
	err = e.Guarded(t.Step, medianMS(orig), func() (err error) { mine, err = t.Measure(code); return err })
	switch {
	case ShowFault(t.Step, err, SanitizeHint):
		return nil
	case err != nil:
		show.Note(show.Failure, "Your "+t.Step+" failed its check: "+strings.TrimRight(err.Error(), ". ")+
			". An element that is wrong or never written may come from an access out of bounds: to see the source line of any, "+SanitizeHint)
		return nil
	}
	tab, faster := TryTable(t.Step, orig, mine, e.Receipt)
	tab.Display()
	kind := show.Success
	if !faster {
		kind = show.Info
	}
	show.Note(kind, fmt.Sprintf("Your %s passed the check on every case; the table gives its time beside the original's, measured in this run.", t.Step))
	return nil
}

// AsReader runs f with the sources it builds taken as the reader's: each is assembled for the
// GPU's real architecture before it is loaded, so that a limit it breaks (static shared memory over
// 48 KiB) is named with the GPU's figures, in both modes. A lesson's own Try builds the reader's
// code through it.
func (e *Env) AsReader(f func() error) error {
	prev := e.reader
	e.reader = true
	defer func() { e.reader = prev }()
	return f()
}

// asReader is AsReader when on, and f alone otherwise.
func (e *Env) asReader(on bool, f func() error) error {
	if !on {
		return f()
	}
	return e.AsReader(f)
}

// medianMS is the first record's median: the original's time per launch for the deadline message.
func medianMS(recs []record.Record) float64 {
	if len(recs) == 0 {
		return 0
	}
	return recs[0].MedianMS
}

func capital(s string) string {
	if s == "" {
		return s
	}
	if c := s[0]; c >= 'a' && c <= 'z' {
		return string(c-'a'+'A') + s[1:]
	}
	return s
}

// TryTable pairs the original step's records with the reader's, case by case: both medians, the
// speedup, the reader's share of its own ceiling (show.ShareCell: the copy bandwidth or the peak of
// its dtype, FP32 or the datasheet tensor-core peak of its format, whichever it uses more; "—" for a
// kernel under 1% of both, bound by launches or latency), and the reader's check. faster says the
// reader's kernel was faster on every case.
func TryTable(step string, orig, mine []record.Record, receipt record.Receipt) (show.Table, bool) {
	t := show.Table{Title: "Your " + step + " beside the original, measured in this run",
		Header: []string{"case", "dtype", "shape", "original", "yours", "yours vs original", "yours: share of the GPU", "your check"}}
	faster := len(orig) == len(mine) && len(mine) > 0
	for i, m := range mine {
		o := record.Record{}
		if i < len(orig) {
			o = orig[i]
		}
		sp := "—"
		if o.MedianMS > 0 && m.MedianMS > 0 {
			sp = show.Times(o.MedianMS / m.MedianMS)
			faster = faster && m.MedianMS < o.MedianMS
		}
		share := show.ShareCell(receipt, m) // of its own ceiling; a tensor-core peak this GPU lacks is said, not replaced
		chk := "FAIL"
		if m.Correct {
			chk = fmt.Sprintf("pass, %s (rel L2 %.1e)", m.Tol, m.RelL2)
		}
		t.Rows = append(t.Rows, []string{m.Case, m.DType, m.Shape, bench.FormatMS(o.MedianMS), bench.FormatMS(m.MedianMS), sp, share, chk})
	}
	t.Caption = show.Sentences("Both kernels checked on NaN-poisoned outputs against the float64 reference, then timed by the suite's method in one process.",
		show.PeakNote(receipt, mine), show.ShareNote(receipt, mine), "Measured: "+receipt.String())
	return t, faster
}

// RecordedAs is a Trial's Recorded for a step that a run records as one record: the record of
// caseName and variant, when the run has it.
func RecordedAs(caseName, variant string) func(run *record.Run) []record.Record {
	return func(run *record.Run) []record.Record {
		if r, ok := run.Find(caseName, variant, 0); ok {
			return []record.Record{r}
		}
		return nil
	}
}

// EditedVariant is the variant name of a step's record in a Try: the step's own name for the
// original (code empty), and the name marked as the reader's for their edit.
func EditedVariant(step, code string) string {
	if code == "" {
		return step
	}
	return step + " (your edit)"
}

// Edited is rec with its variant marked as the reader's edit when code is not empty (EditedVariant).
func Edited(rec record.Record, code string) record.Record {
	rec.Variant = EditedVariant(rec.Variant, code)
	return rec
}

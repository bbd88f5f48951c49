package lab

import (
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/diff"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// NewDesignShare is the share of a step's code lines (CodeLines) kept from the step before it below
// which the step is shown as a kernel of another design, in full, rather than as a diff: almost
// every line would be marked, and the diff would say less than the source.
const NewDesignShare = 0.15

// Change is how a step's kernel is shown against the step before it in its lesson's order.
type Change struct {
	Step, Prev     string         // the step and the one it is compared with ("" for the first step)
	Source, Before compile.Source // their sources (Before is empty for the first step)
	Lines          []diff.Line    // the edit script from Before to Source
}

// Kind says how Show presents the change: "first" (no step before it: the source in full), "same
// file" (the step before it has the same source), "new design" (it keeps fewer than NewDesignShare
// of its lines from the step before: the source in full), or "diff".
func (c Change) Kind() string {
	switch {
	case c.Prev == "":
		return "first"
	case c.Before.Code == c.Source.Code:
		return "same file"
	}
	if kept, n := c.CodeLines(); float64(kept) < NewDesignShare*float64(n) {
		return "new design"
	}
	return "diff"
}

// CodeLines counts the step's code lines (neither comments nor lines of three characters or fewer,
// such as a brace) and how many of them it keeps from the step before it.
func (c Change) CodeLines() (kept, n int) {
	for _, l := range c.Lines {
		t := strings.TrimSpace(l.Text)
		if l.Op == diff.Removed || len(t) <= 3 || strings.HasPrefix(t, "//") {
			continue
		}
		n++
		if l.Op == diff.Same {
			kept++
		}
	}
	return kept, n
}

// Show displays the step's kernel as Walk shows it: the first step's source in full; a later step as
// the diff from the step before it (what changed, with a few lines of context) and its full source
// folded below; a step with the same file as the one before, or one that keeps little of it (a kernel
// of another design), with a one-line note saying so.
func (c Change) Show() {
	switch c.Kind() {
	case "first":
		show.Source(c.Source.Name, c.Source.Code)
	case "same file":
		show.Note(show.Info, fmt.Sprintf("%s runs the same kernel file as step %s (%s): it differs in how that file is compiled or launched (its format, compile-time constants or launch), not in its source, folded below.", c.Step, c.Prev, c.Source.Name))
		show.SourceCollapsed(c.Source.Name, c.Source.Code)
	case "new design":
		kept, n := c.CodeLines()
		show.Note(show.Info, fmt.Sprintf("%s keeps %d of its %d lines of code from step %s (%s): a kernel of another design rather than a change of that one, so it is shown in full, not as a diff.", c.Step, kept, n, c.Prev, c.Before.Name))
		show.Source(c.Source.Name, c.Source.Code)
	default:
		show.Diff("What changed from step "+c.Prev, c.Before.Name, c.Source.Name, c.Before.Code, c.Source.Code)
		show.SourceCollapsed(c.Source.Name, c.Source.Code)
	}
}

// ChangeOf is the Change of the step called name among a lesson's steps, in the lesson's order: it
// is compared with the step just before it. nameOf names a step as StepNamed finds it; source gives
// its kernel source.
func ChangeOf[S any](lesson string, steps []S, nameOf func(S) string, source func(S) (compile.Source, error), name string) (Change, error) {
	i := -1
	for k, st := range steps { // the step StepNamed finds
		if n := nameOf(st); n == name || strings.HasPrefix(n, name+" ") {
			i = k
			break
		}
	}
	if i < 0 {
		_, err := StepNamed(lesson, steps, nameOf, name)
		return Change{}, err
	}
	cur, err := source(steps[i])
	if err != nil {
		return Change{}, err
	}
	c := Change{Step: nameOf(steps[i]), Source: cur}
	if i == 0 {
		return c, nil
	}
	if c.Before, err = source(steps[i-1]); err != nil {
		return Change{}, err
	}
	c.Prev = nameOf(steps[i-1])
	c.Lines = diff.Lines(diff.Split(c.Before.Code), diff.Split(c.Source.Code))
	return c, nil
}

// ShowChange shows the kernel of the step called name as Walk does (ChangeOf, then Change.Show).
func ShowChange[S any](lesson string, steps []S, nameOf func(S) string, source func(S) (compile.Source, error), name string) error {
	c, err := ChangeOf(lesson, steps, nameOf, source, name)
	if err != nil {
		return err
	}
	c.Show()
	return nil
}

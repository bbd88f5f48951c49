// Package diff compares two texts line by line, as a unified diff does: which lines of the old text
// were removed, which lines of the new one were added, and which they share. The notebooks show
// each kernel step as its change from the step before it.
//
//	lines := diff.Lines(diff.Split(old), diff.Split(new))
//	for _, h := range diff.Hunks(lines, 3) {
//		fmt.Print(h.Header())
//		...
//	}
//
// The edit script is a longest common subsequence of the lines (after the common head and tail are
// set aside), so it is the shortest one: every line it keeps is kept in order in both texts.
package diff

import (
	"fmt"
	"strings"
)

// Op is what an edit script does with one line.
type Op int

const (
	// Same is a line both texts have.
	Same Op = iota
	// Removed is a line of the old text only.
	Removed
	// Added is a line of the new text only.
	Added
)

// Line is one line of an edit script: what happens to it, its text, and its 1-based numbers in the
// old text (Old) and the new one (New), 0 where it is not in that text.
type Line struct {
	Op       Op
	Text     string
	Old, New int
}

// Split cuts a text into lines, without a last empty line for a final newline.
func Split(text string) []string {
	text = strings.TrimSuffix(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// Lines is the shortest edit script that turns the lines of a into those of b: every line of both,
// in order, each Same, Removed or Added.
func Lines(a, b []string) []Line {
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	out := make([]Line, 0, len(a)+len(b)-head-tail)
	for i := 0; i < head; i++ {
		out = append(out, Line{Op: Same, Text: a[i], Old: i + 1, New: i + 1})
	}
	out = append(out, middle(a[head:len(a)-tail], b[head:len(b)-tail], head)...)
	for k := tail; k > 0; k-- {
		i, j := len(a)-k, len(b)-k
		out = append(out, Line{Op: Same, Text: a[i], Old: i + 1, New: j + 1})
	}
	return out
}

// middle is the edit script of a and b by their longest common subsequence, numbered from
// offset+1. Within a change, removed lines come before added ones, as diff -u writes them.
func middle(a, b []string, offset int) []Line {
	n, m := len(a), len(b)
	// lcs[i][j] is the length of the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out, added []Line
	flush := func() { out, added = append(out, added...), added[:0] }
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			flush()
			out = append(out, Line{Op: Same, Text: a[i], Old: offset + i + 1, New: offset + j + 1})
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] > lcs[i+1][j]):
			added = append(added, Line{Op: Added, Text: b[j], New: offset + j + 1})
			j++
		default:
			out = append(out, Line{Op: Removed, Text: a[i], Old: offset + i + 1})
			i++
		}
	}
	flush()
	return out
}

// Count is how many lines an edit script removes, adds and keeps.
func Count(lines []Line) (removed, added, same int) {
	for _, l := range lines {
		switch l.Op {
		case Removed:
			removed++
		case Added:
			added++
		default:
			same++
		}
	}
	return removed, added, same
}

// Hunk is a run of changes with up to context unchanged lines around them, as a unified diff shows
// it: the first line of each text it covers (OldStart, NewStart, 1-based; for an empty side, the
// line before it) and how many lines of each (OldLines, NewLines).
type Hunk struct {
	OldStart, OldLines int
	NewStart, NewLines int
	Lines              []Line
}

// Header is the hunk's "@@ -a,b +c,d @@" line, as diff -u writes it (",1" left out).
func (h Hunk) Header() string {
	return fmt.Sprintf("@@ -%s +%s @@", span(h.OldStart, h.OldLines), span(h.NewStart, h.NewLines))
}

func span(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

// Hunks groups an edit script's changes with context unchanged lines before and after each; changes
// closer than 2*context lines share a hunk. Identical texts have no hunk.
func Hunks(lines []Line, context int) []Hunk {
	context = max(context, 0)
	var hunks []Hunk
	for i := 0; i < len(lines); {
		if lines[i].Op == Same {
			i++
			continue
		}
		start := max(i-context, 0)
		end := i // one past the last change of the hunk
		for k := i; k < len(lines); k++ {
			if lines[k].Op != Same {
				end = k + 1
				continue
			}
			if k-end >= 2*context {
				break
			}
		}
		stop := min(end+context, len(lines))
		hunks = append(hunks, newHunk(lines[start:stop], lines[:start]))
		i = stop
	}
	return hunks
}

// newHunk numbers a hunk of lines from the lines before it.
func newHunk(lines, before []Line) Hunk {
	h := Hunk{Lines: lines}
	oldPrev, newPrev := 0, 0
	for _, l := range before {
		oldPrev, newPrev = max(oldPrev, l.Old), max(newPrev, l.New)
	}
	for _, l := range lines {
		if l.Op != Added {
			h.OldLines++
		}
		if l.Op != Removed {
			h.NewLines++
		}
	}
	h.OldStart, h.NewStart = oldPrev+1, newPrev+1
	if h.OldLines == 0 {
		h.OldStart = oldPrev
	}
	if h.NewLines == 0 {
		h.NewStart = newPrev
	}
	return h
}

// Unified is the unified diff of old and new text with context lines around each change, headed by
// their names ("--- old", "+++ new"); "" when the texts have the same lines.
func Unified(oldName, newName, old, new string, context int) string {
	hunks := Hunks(Lines(Split(old), Split(new)), context)
	if len(hunks) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", oldName, newName)
	for _, h := range hunks {
		b.WriteString(h.Header() + "\n")
		for _, l := range h.Lines {
			b.WriteString(Prefix(l.Op) + l.Text + "\n")
		}
	}
	return b.String()
}

// Prefix is the mark a unified diff puts before a line: " ", "-" or "+".
func Prefix(op Op) string {
	switch op {
	case Removed:
		return "-"
	case Added:
		return "+"
	}
	return " "
}

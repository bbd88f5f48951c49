package sass

import (
	"fmt"
	"html"
	"strconv"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/show"
)

// CountTable is the count table of a listing: one row per class of Classes that some kernel holds
// (and the classes whose absence matters, such as 128-bit loads and spills, even at zero), one
// column per kernel. The counts are of instructions in the code, not of instructions executed: a
// load inside a loop counts once.
func CountTable(l *Listing) show.Table {
	t := show.Table{Title: fmt.Sprintf("SASS of %s for %s: instructions by kind", l.Source, l.Arch),
		Header: []string{"instructions", "SASS"}}
	all := make([][]Count, len(l.Kernels))
	totals := make([]int, len(l.Kernels))
	for i, k := range l.Kernels {
		t.Header = append(t.Header, k.Name)
		all[i], totals[i] = Counts(k)
	}
	for ci, c := range Classes {
		row := []string{c.Name, c.SASS}
		any := false
		for i := range l.Kernels {
			n := all[i][ci].N
			any = any || n > 0
			row = append(row, strconv.Itoa(n))
		}
		if any || c.Always {
			t.Rows = append(t.Rows, row)
		}
	}
	row := []string{"every instruction", ""}
	for _, n := range totals {
		row = append(row, strconv.Itoa(n))
	}
	t.Rows = append(t.Rows, row)
	t.Caption = "Counted in the machine code, not as executed (an instruction in a loop counts once). " + l.Provenance()
	return t
}

// Provenance says how the listing was made: "NVRTC 11.8 for sm_90 (a real architecture, with
// -lineinfo); disassembled by nvdisasm 11.8 (/usr/bin/nvdisasm)."
func (l *Listing) Provenance() string {
	p := fmt.Sprintf("Compiled by NVRTC %s for %s; disassembled by %s.", l.NVRTC, l.Arch, l.Tool)
	if !l.LineInfo {
		p += " Without source lines: NVRTC before 12 crashes on some kernels compiled with -lineinfo, so it is left off."
	}
	if r := l.Recorded; r != nil {
		p += fmt.Sprintf(" Recorded on %s (commit %s), not compiled here.", r.Day(), shortCommit(r.Commit))
	}
	return p
}

// Text is the listing, kernel by kernel, each run of instructions under the source line it came
// from (with that line's text when the listing knows the source).
func (l *Listing) Text() string {
	text, _ := l.TextUpTo(0)
	return text
}

// CollapsedMax is how many instructions the collapsed listing of Walk and Try (HTML) shows; the
// count table above it counts them all, and Env.ShowSASS shows the whole listing.
const CollapsedMax = 1200

// TextUpTo is Text stopped after max instructions (every one when max is 0), and how many it left out.
func (l *Listing) TextUpTo(max int) (text string, left int) {
	shown := 0
	var lines []string
	if l.Code != "" {
		lines = strings.Split(l.Code, "\n")
	}
	var b strings.Builder
	for _, k := range l.Kernels {
		_, runs := Counts(k)
		fmt.Fprintf(&b, "// kernel %s: %d instructions", k.Name, runs)
		if pad := len(k.Instructions) - runs; pad > 0 {
			fmt.Fprintf(&b, " and %d that never run (@!PT, padding)", pad)
		}
		b.WriteString("\n")
		lastFile, lastLine := "", -1
		for _, in := range k.Instructions {
			if max > 0 && shown >= max {
				left++
				continue
			}
			shown++
			if in.File != lastFile || in.Line != lastLine {
				lastFile, lastLine = in.File, in.Line
				switch {
				case in.Line == 0:
					b.WriteString("      // (no source line)\n")
				case in.Line <= len(lines):
					fmt.Fprintf(&b, "      // line %d: %s\n", in.Line, strings.TrimSpace(lines[in.Line-1]))
				default:
					fmt.Fprintf(&b, "      // %s, line %d\n", baseName(in.File), in.Line)
				}
			}
			pred := in.Pred
			if pred != "" {
				pred += " "
			}
			fmt.Fprintf(&b, "%04x  %4d  %s%s %s\n", in.Offset, in.Line, pred, in.Op, in.Args)
		}
		b.WriteString("\n")
	}
	return b.String(), left
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	if c == "" {
		return "unknown"
	}
	return c
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// Display shows the count table and, collapsed under it, the listing with source lines.
func (l *Listing) Display() {
	CountTable(l).Display()
	n := 0
	for _, k := range l.Kernels {
		_, runs := Counts(k)
		n += runs
	}
	show.Details(fmt.Sprintf("SASS listing of %s for %s (%d instructions, each with its source line)", l.Source, l.Arch, n), l.Text())
}

// HTML is the count table and the listing folded into one <details> block under summary.
// The listing stops after CollapsedMax instructions, saying how many more the source has.
func (l *Listing) HTML(summary string) string {
	text, left := l.TextUpTo(CollapsedMax)
	if left > 0 {
		text += fmt.Sprintf("... and %d more instructions, not shown here (the count table above counts them all); env.ShowSASS(source, options) shows the whole listing.\n", left)
	}
	return fmt.Sprintf(`<details><summary>%s</summary>%s<details><summary>listing, each run of instructions under its source line</summary><pre style="font-size:12px;line-height:1.35">%s</pre></details></details>`,
		html.EscapeString(summary), CountTable(l).HTML(), html.EscapeString(text))
}

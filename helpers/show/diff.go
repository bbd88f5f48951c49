package show

import (
	"fmt"
	"html"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/diff"
)

// DiffContext is how many unchanged lines a shown diff keeps around each change.
const DiffContext = 3

// Diff displays the change from old to new (a kernel step and the one before it) as a unified diff:
// removed lines on red, added lines on green, with their line numbers in the old and the new file
// and DiffContext unchanged lines around each change; outside a notebook the plain unified diff.
// title heads it ("What changed from step 1").
func Diff(title, oldName, newName, old, new string) {
	HTML(DiffHTML(title, oldName, newName, old, new), DiffText(title, oldName, newName, old, new))
}

// DiffText is Diff's plain-text form: the title, then the unified diff ("no line differs" when the
// texts have the same lines).
func DiffText(title, oldName, newName, old, new string) string {
	u := diff.Unified(oldName, newName, old, new, DiffContext)
	if u == "" {
		u = "no line differs"
	}
	return title + "\n" + strings.TrimSuffix(u, "\n")
}

var diffStyle = map[diff.Op]string{
	diff.Same:    "",
	diff.Removed: "background:#fdecec;color:#8f1d1d",
	diff.Added:   "background:#e6ffec;color:#14532d",
}

// DiffHTML is Diff's HTML: a block titled title, each hunk under its @@ line, each line with its
// number in the old file, its number in the new one, its mark (-, + or a space) and its text.
func DiffHTML(title, oldName, newName, old, new string) string {
	lines := diff.Lines(diff.Split(old), diff.Split(new))
	removed, added, _ := diff.Count(lines)
	var b strings.Builder
	fmt.Fprintf(&b, `<div class="kernels-diff"><div style="font-weight:600;margin:4px 0">%s <span style="font-weight:normal;color:#666">(<code>%s</code> → <code>%s</code>: <span style="color:#16a34a">+%d</span> <span style="color:#dc2626">−%d</span> lines)</span></div>`,
		html.EscapeString(title), html.EscapeString(oldName), html.EscapeString(newName), added, removed)
	b.WriteString(`<pre style="font-size:12px;line-height:1.35;margin:0">`)
	hunks := diff.Hunks(lines, DiffContext)
	if len(hunks) == 0 {
		b.WriteString("no line differs")
	}
	num := func(n int) string {
		if n == 0 {
			return "    "
		}
		return fmt.Sprintf("%4d", n)
	}
	for _, h := range hunks {
		fmt.Fprintf(&b, `<div style="color:#6b7280;background:#f3f4f6">%s</div>`, html.EscapeString(h.Header()))
		for _, l := range h.Lines {
			fmt.Fprintf(&b, `<div style="%s"><span style="color:#999;user-select:none">%s %s </span>%s %s</div>`,
				diffStyle[l.Op], num(l.Old), num(l.New), diff.Prefix(l.Op), html.EscapeString(l.Text))
		}
	}
	b.WriteString("</pre></div>")
	return b.String()
}

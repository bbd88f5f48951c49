// Package show displays the suite's results in a GoNB notebook: HTML tables (the article's numbers
// beside yours), kernel source with line numbers, compile reports, charts, notes and a live progress
// bar. Outside a notebook (tests, the reproduce command) the same calls print plain text.
package show

import (
	"fmt"
	"html"
	"io"
	"os"
	"strings"

	"github.com/janpfeifer/gonb/gonbui"
	"gonum.org/v1/plot"

	"github.com/cudalessons/cudalessons/helpers/charts"
)

// Out is where the plain-text forms go outside a notebook.
var Out io.Writer = os.Stdout

// InNotebook reports whether the program runs as a GoNB cell.
func InNotebook() bool { return gonbui.IsNotebook }

// HTML displays raw HTML in a notebook, or the given text outside one.
func HTML(htmlText, plain string) {
	if InNotebook() {
		gonbui.DisplayHTML(htmlText)
		return
	}
	fmt.Fprintln(Out, plain)
}

// Markdown displays Markdown in a notebook, or prints it outside one.
func Markdown(md string) {
	if InNotebook() {
		gonbui.DisplayMarkdown(md)
		return
	}
	fmt.Fprintln(Out, md)
}

// Flush waits until the notebook has received everything displayed so far. A cell that ends
// right after displaying can otherwise lose its last output (seen in headless runs).
func Flush() {
	if InNotebook() {
		gonbui.Sync()
	}
}

// Note kinds.
const (
	Info    = "info"
	Warning = "warning"
	Failure = "failure"
	Success = "success"
)

var noteColors = map[string][2]string{
	Info:    {"#eef5ff", "#3b82f6"},
	Warning: {"#fff8e6", "#d97706"},
	Failure: {"#fdecec", "#dc2626"},
	Success: {"#ecfdf3", "#16a34a"},
}

// Outcome is the kind of note for a check: Success when ok, Failure otherwise.
func Outcome(ok bool) string {
	if ok {
		return Success
	}
	return Failure
}

// Note displays a boxed message: Info, Warning, Failure or Success.
func Note(kind, text string) {
	c, ok := noteColors[kind]
	if !ok {
		c = noteColors[Info]
	}
	HTML(fmt.Sprintf(`<div style="background:%s;border-left:4px solid %s;padding:6px 10px;margin:4px 0;white-space:pre-wrap">%s</div>`,
		c[0], c[1], html.EscapeString(text)), strings.ToUpper(kind)+": "+text)
}

// Error displays err as a failure note (a compile error keeps its source lines aligned) and
// returns it, so a cell can both show and propagate it. The HTML carries the class kernels-error,
// which the notebook tests look for: a notebook that shows an error fails them. It then waits until
// the notebook has everything displayed so far (Flush), so a cell may end with show.Error(...).
func Error(err error) error {
	if err != nil {
		HTML(fmt.Sprintf(`<pre class="kernels-error" style="background:#fdecec;border-left:4px solid #dc2626;padding:6px 10px">%s</pre>`, html.EscapeString(err.Error())),
			"ERROR: "+err.Error())
	}
	Flush()
	return err
}

// Source displays CUDA source with line numbers, the numbers NVRTC's errors refer to.
func Source(name, code string) { source(name, code, true) }

// SourceCollapsed is Source folded under its file name, for the reader to open (below a diff that
// shows what changed).
func SourceCollapsed(name, code string) { source(name, code, false) }

func source(name, code string, open bool) {
	lines := strings.Split(strings.TrimRight(code, "\n"), "\n")
	var h, t strings.Builder
	attr := ""
	if open {
		attr = " open"
	}
	fmt.Fprintf(&h, `<details%s><summary><code>%s</code> (%d lines)</summary><pre style="font-size:12px;line-height:1.35">`, attr, html.EscapeString(name), len(lines))
	fmt.Fprintf(&t, "--- %s\n", name)
	for i, l := range lines {
		fmt.Fprintf(&h, `<span style="color:#999;user-select:none">%4d  </span>%s`+"\n", i+1, html.EscapeString(l))
		fmt.Fprintf(&t, "%4d  %s\n", i+1, l)
	}
	h.WriteString("</pre></details>")
	HTML(h.String(), t.String())
}

// Plot displays a chart as SVG in a notebook, or its title outside one.
func Plot(p *plot.Plot) error {
	if !InNotebook() {
		fmt.Fprintf(Out, "[chart: %s]\n", p.Title.Text)
		return nil
	}
	svg, err := charts.SVG(p)
	if err != nil {
		return err
	}
	gonbui.DisplaySVG(svg)
	return nil
}

// Progress is a live progress bar in a notebook cell (a line per step outside one).
type Progress struct {
	id    string
	title string
	total int
	done  int
}

// NewProgress starts a progress bar of total steps.
func NewProgress(title string, total int) *Progress {
	p := &Progress{title: title, total: max(total, 1)}
	if InNotebook() {
		p.id = "progress-" + gonbui.UniqueID()
	}
	p.draw("starting")
	return p
}

// Step marks one step done, labelled with what was just finished.
func (p *Progress) Step(label string) {
	p.done = min(p.done+1, p.total)
	p.draw(label)
}

// Done fills the bar.
func (p *Progress) Done() {
	p.done = p.total
	p.draw("done")
}

func (p *Progress) draw(label string) {
	pct := 100 * p.done / p.total
	if !InNotebook() {
		fmt.Fprintf(os.Stderr, "%s [%d/%d] %s\n", p.title, p.done, p.total, label)
		return
	}
	gonbui.UpdateHTML(p.id, fmt.Sprintf(
		`<div style="font-family:sans-serif;font-size:13px">%s: %d/%d <i>%s</i><div style="background:#eee;width:420px;height:10px;border-radius:4px"><div style="background:#3b82f6;width:%d%%;height:10px;border-radius:4px"></div></div></div>`,
		html.EscapeString(p.title), p.done, p.total, html.EscapeString(label), pct))
}

// Details displays preformatted text collapsed under a one-line summary (an HTML <details> block
// the reader opens), or the summary and the text outside a notebook.
func Details(summary, text string) {
	h := fmt.Sprintf(`<details><summary>%s</summary><pre style="font-size:12px;line-height:1.35">%s</pre></details>`,
		html.EscapeString(summary), html.EscapeString(text))
	HTML(h, "--- "+summary+"\n"+text)
}

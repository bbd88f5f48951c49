package notebooks

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"image"
	"image/draw"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserNames are the executables findBrowser looks for on PATH, after $CHROME.
var browserNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// findBrowser returns the Chromium (or Chrome) to drive: $CHROME, else the first of browserNames on PATH.
func findBrowser() (string, error) {
	if p := os.Getenv("CHROME"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Errorf("CHROME=%s: %w", p, err)
		}
		return p, nil
	}
	for _, n := range browserNames {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no Chromium or Chrome on PATH (looked for %s; set CHROME to use another)", strings.Join(browserNames, ", "))
}

// startBrowser starts headless Chromium with a new empty profile in userDir. Cancelling the returned
// context ends the browser. The flags keep it from reaching for the network on its own (a closed
// network refuses its connections otherwise) and let it run as root.
func startBrowser(path, userDir string) (context.Context, context.CancelFunc, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(userDir),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	cancel := func() { cancelBrowser(); cancelAlloc() }
	if err := chromedp.Do(bctx); err != nil { // starts the browser
		cancel()
		return nil, nil, fmt.Errorf("starting %s headless: %w", path, err)
	}
	return bctx, cancel, nil
}

// limits bound one notebook's run.
type limits struct {
	Load time.Duration // page loaded and kernel connected
	Run  time.Duration // Run All until no cell runs

	// Logf, when set, is told every 30 s which cell runs.
	Logf func(format string, args ...any)
}

// check says what a notebook's run must show.
type check struct {
	Banner    string   // a cell's output starts with it (the mode banner)
	Rendering bool     // at least one plot (SVG) and one table rendered
	Checker   []string // the command of .ci/check_notebook.py, run on the executed copy (none when empty)
	// Says are texts that must appear in the outputs of the code cells whose source holds a marker.
	Says []cellSays
	// SASS asks for at least one SASS count table (helpers/sass's view, as Walk shows it).
	SASS bool
}

// cellSays is what the code cells whose source contains Marker must show in their outputs.
type cellSays struct {
	Marker string
	Texts  []string
}

// missingSays checks the executed notebook doc (Jupyter's JSON) against says: one problem per text
// that is missing, and one per marker that no code cell's source holds.
func missingSays(doc string, says []cellSays) ([]string, error) {
	var nb struct {
		Cells []struct {
			Type    string           `json:"cell_type"`
			Source  json.RawMessage  `json:"source"`
			Outputs []map[string]any `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal([]byte(doc), &nb); err != nil {
		return nil, fmt.Errorf("reading the executed notebook: %w", err)
	}
	var problems []string
	for _, want := range says {
		found := false
		for i, c := range nb.Cells {
			src := joinText(c.Source)
			if c.Type != "code" || !strings.Contains(src, want.Marker) {
				continue
			}
			found = true
			var out strings.Builder
			for _, o := range c.Outputs {
				out.WriteString(outputText(o))
			}
			text := html.UnescapeString(out.String())
			for _, t := range want.Texts {
				if !strings.Contains(text, t) {
					problems = append(problems, fmt.Sprintf("cell %d (%s) does not say %q; it showed:\n%.3000s", i, want.Marker, t, text))
				}
			}
		}
		if !found {
			problems = append(problems, fmt.Sprintf("no code cell holds %q", want.Marker))
		}
	}
	return problems, nil
}

// joinText reads a notebook's multi-line string: one string, or a list of lines.
func joinText(raw json.RawMessage) string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one
	}
	var lines []string
	_ = json.Unmarshal(raw, &lines)
	return strings.Join(lines, "")
}

// outputText is the text of one output: a stream's text, an error's name and value, a display's
// text/plain and text/html.
func outputText(o map[string]any) string {
	var b strings.Builder
	add := func(v any) {
		raw, _ := json.Marshal(v)
		b.WriteString(joinText(raw) + "\n")
	}
	if v, ok := o["text"]; ok {
		add(v)
	}
	for _, k := range []string{"ename", "evalue"} {
		if v, ok := o[k]; ok {
			add(v)
		}
	}
	if data, ok := o["data"].(map[string]any); ok {
		for _, k := range []string{"text/plain", "text/html"} {
			if v, ok := data[k]; ok {
				add(v)
			}
		}
	}
	return b.String()
}

// notebookRun is what one notebook's run showed.
type notebookRun struct {
	Name      string
	Took      time.Duration // from Run All until no cell ran
	CodeCells int           // code cells that ran
	Plots     int
	Tables    int
	Banner    string
	Files     []string // screenshots and the executed copy
}

// cellState is one cell as the page's notebook model has it.
type cellState struct {
	Index   int    `json:"index"`
	Type    string `json:"type"`
	Source  string `json:"source"`
	Count   any    `json:"count"` // execution count: a number once it ran, "*" while it runs
	Outputs int    `json:"outputs"`
}

// label names a cell in messages: its index among all cells (as Jupyter and check_notebook.py count)
// and its first line.
func (c cellState) label() string {
	line := strings.TrimSpace(c.Source)
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = strings.TrimSpace(line[:i]) + " …"
	}
	if len(line) > 90 {
		line = line[:90] + " …"
	}
	return fmt.Sprintf("cell %d (%q)", c.Index, line)
}

// setupOnly reports whether a code cell holds only shell commands and magics (lines starting with
// ! or %, or blank): such cells, like the notebooks' first, may ran silently.
func setupOnly(src string) bool {
	for _, l := range strings.Split(src, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "!") && !strings.HasPrefix(l, "%") {
			return false
		}
	}
	return true
}

// The page's JavaScript. Jupyter Notebook 6 (classic) exposes the notebook as Jupyter.notebook.
const (
	jsLoaded = `!!(window.Jupyter && Jupyter.notebook && Jupyter.notebook._fully_loaded)`

	// jsPrepare makes the page unable to save (no autosave; save and checkpoint refuse), lets it
	// close without a prompt, and records the kernel's deaths and restarts.
	jsPrepare = `(() => {
  const nb = Jupyter.notebook;
  nb.set_autosave_interval(0);
  const refuse = () => Promise.reject(new Error('the browser test never saves a notebook'));
  nb.save_notebook = refuse;
  nb.save_checkpoint = refuse;
  window.onbeforeunload = null;
  window.__browserTest = {events: []};
  nb.events.on('kernel_dead.Kernel kernel_restarting.Kernel kernel_autorestarting.Kernel kernel_killed.Kernel kernel_connection_failed.Kernel kernel_disconnected.Kernel',
    (e) => window.__browserTest.events.push(e.type));
  return true;
})()`

	jsKernel = `(() => {
  const k = window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel;
  if (!k) return {connected: false, name: '', implementation: ''};
  return {connected: k.is_connected() && !!k.info_reply, name: k.name || '',
          implementation: (k.info_reply && k.info_reply.implementation) || ''};
})()`

	// jsClear clears every output and prompt through the menu item Cell > All Output > Clear (a
	// submenu, clicked from the page); it returns the code cells that still have an output or a
	// prompt.
	jsClear = `(() => {
  document.querySelector('#clear_all_output > a').click();
  const stale = [];
  Jupyter.notebook.get_cells().forEach((c, i) => {
    if (c.cell_type === 'code' && (c.output_area.outputs.length > 0 || c.input_prompt_number != null)) stale.push(i);
  });
  return stale;
})()`

	jsProgress = `(() => {
  const running = [];
  Jupyter.notebook.get_cells().forEach((c, i) => { if (c.cell_type === 'code' && c.element.hasClass('running')) running.push(i); });
  return {running: running, events: window.__browserTest.events};
})()`

	jsCells = `Jupyter.notebook.get_cells().map((c, i) => ({
  index: i, type: c.cell_type, source: c.get_text(),
  count: c.cell_type === 'code' ? (c.input_prompt_number === undefined ? null : c.input_prompt_number) : null,
  outputs: c.cell_type === 'code' ? c.output_area.outputs.length : 0,
}))`

	// jsRendered counts what the outputs render: plots (SVG at least 150x100 px), tables (a header
	// and a row at least, laid out), and finds the output that starts with the banner prefix. It
	// marks the first plot for its screenshot. And it lists the chart labels (gonum/plot's, in
	// Liberation Serif) that the browser draws wider than the layout gave them room for: in a browser
	// without that font, a wider one ran the labels down the left of horizontal bars under the bars.
	// A label must carry its layout width (textLength) and be drawn in it, within 2%.
	jsRendered = `((prefix) => {
  const q = (s) => Array.from(document.querySelectorAll('#notebook .output_subarea ' + s));
  const plots = q('svg').filter((e) => { const r = e.getBoundingClientRect(); return r.width >= 150 && r.height >= 100; });
  const tables = q('table').filter((t) => t.rows.length >= 2 && t.getBoundingClientRect().height > 0);
  if (plots.length > 0) plots[0].setAttribute('data-browser-test-plot', '1');
  const banner = Array.from(document.querySelectorAll('#notebook .output_subarea'))
    .map((e) => e.textContent.trim()).find((t) => prefix !== '' && t.startsWith(prefix)) || '';
  const overflowing = [];
  plots.forEach((svg) => svg.querySelectorAll('text').forEach((t) => {
    if (!t.style.fontFamily.includes('Liberation Serif') || t.textContent.trim() === '') return;
    const drawn = t.getBBox().width;
    const room = t.hasAttribute('textLength') ? t.textLength.baseVal.value : 0;
    if (room === 0 || drawn > room * 1.02 + 0.5) overflowing.push(t.textContent.trim() + ' (' + drawn.toFixed(1) + ' for ' + room.toFixed(1) + ')');
  }));
  return {plots: plots.length, tables: tables.length, banner: banner, overflowing: overflowing};
})`

	// jsSASSTables counts the SASS count tables in the outputs: helpers/sass's view is a <details>
	// whose summary starts with "SASS of " and which holds the count table (collapsed: in the page,
	// not laid out).
	jsSASSTables = `Array.from(document.querySelectorAll('#notebook .output_subarea details > summary'))
  .filter((s) => s.textContent.trim().startsWith('SASS of ') && s.parentElement.querySelector('table tr + tr, table tbody tr')).length`

	// jsSASSRefusals counts the outputs that say why a step has no SASS because this NVRTC cannot
	// compile for its architecture (lesson 08's sm_90a steps under NVRTC 11.8): the view's own
	// answer there, not a fault. Any other reason (no nvdisasm, say) is not counted.
	jsSASSRefusals = `Array.from(document.querySelectorAll('#notebook .output_subarea'))
  .filter((e) => /No SASS for \S+: .*cannot compile for compute_/.test(e.textContent)).length`

	jsNotebookJSON = `JSON.stringify(Jupyter.notebook.toJSON(), null, 1)`

	jsTop = `(() => { const s = document.getElementById('site'); if (s) s.scrollTop = 0; window.scrollTo(0, 0); return true; })()`
)

// target is a Jupyter server as runNotebook reaches it: its REST API, what authenticates the
// browser's page (the token in its URL; nothing behind the classroom hub, where the browser logged
// in) and the process that serves it (Jupyter itself, or the hub).
type target struct {
	jupyterAPI
	pageAuth string
	proc     *server
}

// target is the server reached directly, with its token.
func (s *server) target() target { return target{s.jupyterAPI, "?token=" + s.Token, s} }

// runNotebook opens name (a path on the server, relative to dir, the folder it serves) in a new tab
// of the browser, waits for its kernel, clears the outputs, runs all cells and checks the page.
// Screenshots and the executed copy go to out. It never saves the notebook, and fails if the file
// on disk changed. The notebook's kernel is shut down before it returns.
func runNotebook(bctx context.Context, s target, dir, name string, lim limits, want check, out string) (run *notebookRun, err error) {
	ok, err := s.exists(name)
	if err != nil {
		return nil, fmt.Errorf("notebook %s: asking the server: %w", name, err)
	}
	if !ok {
		return nil, fmt.Errorf("notebook %s does not exist on the server (it serves %s)", name, dir)
	}
	path := filepath.Join(dir, name)
	before, err := sumOf(path)
	if err != nil {
		return nil, err
	}
	defer func() {
		if e := s.shutdownSessions(name); e != nil {
			err = errors.Join(err, fmt.Errorf("notebook %s: shutting its kernel down: %w", name, e))
		}
		if after, e := sumOf(path); e != nil || after != before {
			err = errors.Join(err, fmt.Errorf("notebook %s changed on disk during the test (it must never be saved)", name))
		}
	}()

	tctx, cancel := chromedp.NewContext(bctx)
	defer cancel()
	tctx, cancelT := context.WithTimeout(tctx, 2*lim.Load+lim.Run+2*time.Minute)
	defer cancelT()
	if err := chromedp.Do(tctx, chromedp.Navigate(s.URL+"/notebooks/"+escapePath(name)+s.pageAuth)); err != nil {
		return nil, fmt.Errorf("notebook %s: opening the page: %w", name, err)
	}
	if err := waitFor(tctx, lim.Load, func() (bool, error) { return eval[bool](tctx, jsLoaded) }); err != nil {
		return nil, fmt.Errorf("notebook %s: the page did not load within %v: %w", name, lim.Load, err)
	}
	if _, err := eval[bool](tctx, jsPrepare); err != nil {
		return nil, fmt.Errorf("notebook %s: preparing the page: %w", name, err)
	}
	var k kernelState
	if err := waitFor(tctx, lim.Load, func() (bool, error) {
		var err error
		k, err = eval[kernelState](tctx, jsKernel)
		return k.Connected, err
	}); err != nil {
		return nil, fmt.Errorf("notebook %s: the kernel (%q) did not connect within %v: %w", name, k.Name, lim.Load, err)
	}
	if k.Name != "gonb" {
		return nil, fmt.Errorf("notebook %s: its kernel is %q (implementation %q), not gonb", name, k.Name, k.Implementation)
	}

	stale, err := eval[[]int](tctx, jsClear)
	if err != nil {
		return nil, fmt.Errorf("notebook %s: clearing the outputs: %w", name, err)
	}
	if len(stale) > 0 {
		return nil, fmt.Errorf("notebook %s: cells %v kept an output or a prompt after clearing", name, stale)
	}
	// Run All as a reader does it: the Cell menu, then Run All, with the mouse.
	cctx, cancelC := context.WithTimeout(tctx, 30*time.Second)
	err = chromedp.Do(cctx, chromedp.Click(chromedp.CSS("#celllink")), chromedp.Click(chromedp.CSS("#run_all_cells > a")))
	cancelC()
	if err != nil {
		return nil, fmt.Errorf("notebook %s: clicking Cell > Run All: %w", name, err)
	}
	start := time.Now()
	lastLog := start
	run = &notebookRun{Name: name}
	cellsNow := func() []cellState {
		cs, _ := eval[[]cellState](tctx, jsCells)
		return cs
	}
	for {
		p, err := eval[progress](tctx, jsProgress)
		if err != nil {
			return run, fmt.Errorf("notebook %s: reading the page after %v: %w", name, time.Since(start).Round(time.Second), err)
		}
		if !s.proc.Alive() {
			return run, fmt.Errorf("notebook %s: %s exited (%v) %v after Run All; its log ends:\n%s",
				name, s.proc.what, s.proc.waitErr, time.Since(start).Round(time.Second), tailOf(s.proc.Log, 1500))
		}
		if len(p.Events) > 0 {
			at := "after the last cell"
			if len(p.Running) > 0 {
				at = "while " + cellAt(cellsNow(), p.Running[0]) + " was running"
			}
			return run, fmt.Errorf("notebook %s: the kernel died or lost its connection %s, %v after Run All (page events: %s)",
				name, at, time.Since(start).Round(time.Second), strings.Join(p.Events, ", "))
		}
		if len(p.Running) == 0 {
			break
		}
		if time.Since(start) > lim.Run {
			_ = s.interrupt(name)
			return run, fmt.Errorf("notebook %s: %s still running after %v (the notebook's time limit), %d more cells queued behind it",
				name, cellAt(cellsNow(), p.Running[0]), lim.Run, len(p.Running)-1)
		}
		if lim.Logf != nil && time.Since(lastLog) >= 30*time.Second {
			lastLog = time.Now()
			lim.Logf("%s: %v after Run All, %s running, %d cells queued", name, time.Since(start).Round(time.Second),
				cellAt(cellsNow(), p.Running[0]), len(p.Running)-1)
		}
		time.Sleep(500 * time.Millisecond)
	}
	run.Took = time.Since(start)

	var problems []string
	for _, c := range cellsNow() {
		if c.Type != "code" || strings.TrimSpace(c.Source) == "" {
			continue
		}
		if _, ran := c.Count.(float64); !ran {
			problems = append(problems, fmt.Sprintf("%s did not run (prompt %v)", c.label(), c.Count))
			continue
		}
		run.CodeCells++
		if c.Outputs == 0 && !setupOnly(c.Source) {
			problems = append(problems, c.label()+" ran but showed no output")
		}
	}

	r, err := eval[rendered](tctx, fmt.Sprintf("%s(%q)", jsRendered, want.Banner))
	if err != nil {
		return run, fmt.Errorf("notebook %s: reading the rendered outputs: %w", name, err)
	}
	run.Plots, run.Tables, run.Banner = r.Plots, r.Tables, r.Banner
	if want.Banner != "" && r.Banner == "" {
		problems = append(problems, fmt.Sprintf("no output starts with the mode banner %q", want.Banner))
	}
	if want.Rendering && r.Plots == 0 {
		problems = append(problems, "no plot (SVG of at least 150x100 px) rendered")
	}
	if want.Rendering && r.Tables == 0 {
		problems = append(problems, "no table rendered")
	}
	if len(r.Overflowing) > 0 {
		problems = append(problems, fmt.Sprintf("%d chart labels drawn wider than the layout's room for them (width drawn for room), such as %q", len(r.Overflowing), r.Overflowing[:min(3, len(r.Overflowing))]))
	}
	if want.SASS {
		if p := missingSASS(tctx); p != "" {
			problems = append(problems, p)
		}
	}

	stem := strings.TrimSuffix(filepath.Base(name), ".ipynb")
	shot, err := screenshot(tctx, "")
	if err != nil {
		problems = append(problems, fmt.Sprintf("screenshot of the first screen: %v", err))
	} else if f, err := writeFile(out, stem+"-first.png", shot); err != nil {
		problems = append(problems, err.Error())
	} else {
		run.Files = append(run.Files, f)
	}
	if r.Plots > 0 {
		if shot, err := screenshot(tctx, `[data-browser-test-plot]`); err != nil {
			problems = append(problems, fmt.Sprintf("screenshot of a plot: %v", err))
		} else if f, err := writeFile(out, stem+"-plot.png", shot); err != nil {
			problems = append(problems, err.Error())
		} else {
			run.Files = append(run.Files, f)
		}
	}

	if f, err := diagramShot(tctx, out, stem); err != nil {
		problems = append(problems, err.Error())
	} else if f != "" {
		run.Files = append(run.Files, f)
	}

	// The executed copy (never the notebook itself) goes through the suite's own notebook checks.
	if doc, err := eval[string](tctx, jsNotebookJSON); err != nil {
		problems = append(problems, fmt.Sprintf("reading the executed notebook: %v", err))
	} else if f, err := writeFile(out, filepath.Base(name), []byte(doc)); err != nil {
		problems = append(problems, err.Error())
	} else {
		run.Files = append(run.Files, f)
		if len(want.Says) > 0 {
			missing, err := missingSays(doc, want.Says)
			if err != nil {
				problems = append(problems, err.Error())
			}
			problems = append(problems, missing...)
		}
		if len(want.Checker) > 0 {
			argv := append(want.Checker[1:len(want.Checker):len(want.Checker)], f)
			if msg, err := exec.Command(want.Checker[0], argv...).CombinedOutput(); err != nil {
				problems = append(problems, fmt.Sprintf("%s on the executed copy: %v:\n%s", filepath.Base(want.Checker[len(want.Checker)-1]), err, strings.TrimSpace(string(msg))))
			}
		}
	}
	if len(problems) > 0 {
		return run, fmt.Errorf("notebook %s:\n  %s", name, strings.Join(problems, "\n  "))
	}
	return run, nil
}

// The page's answers.
type (
	kernelState struct {
		Connected      bool   `json:"connected"`
		Name           string `json:"name"`
		Implementation string `json:"implementation"`
	}
	progress struct {
		Running []int    `json:"running"` // code cells running or queued
		Events  []string `json:"events"`  // kernel deaths and restarts
	}
	rendered struct {
		Plots       int      `json:"plots"`
		Tables      int      `json:"tables"`
		Banner      string   `json:"banner"`
		Overflowing []string `json:"overflowing"` // chart labels drawn wider than laid out
	}
)

// missingSASS is the problem of a page that shows no SASS count table, nor a note that this NVRTC
// cannot compile a step for its architecture, or "".
func missingSASS(ctx context.Context) string {
	n, err := eval[int](ctx, jsSASSTables)
	switch {
	case err != nil:
		return fmt.Sprintf("counting the SASS tables: %v", err)
	case n > 0:
		return ""
	}
	if r, err := eval[int](ctx, jsSASSRefusals); err == nil && r > 0 {
		return "" // every step's architecture is beyond this NVRTC, and each output says so
	}
	return "no SASS count table (a <details> whose summary starts with \"SASS of \", holding a table) in the outputs, nor a step whose architecture this NVRTC cannot compile for"
}

// eval evaluates a JavaScript expression in the page and decodes its JSON value.
func eval[T any](ctx context.Context, js string) (T, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[T](js))
}

// screenshot captures the first screen of the page (sel "") or the element sel (a CSS selector)
// scrolled into the middle of the screen: the screen is captured and the element's box cut out of
// it.
func screenshot(ctx context.Context, sel string) ([]byte, error) {
	js := jsTop
	if sel != "" {
		// A tall output sits in a scroll box that can cut the element: the box is opened first, as
		// a reader does by clicking beside it.
		js = fmt.Sprintf(`((sel) => { const e = document.querySelector(sel); if (!e) return null;
  const box = e.closest('.output_scroll'); if (box) box.classList.remove('output_scroll');
  e.scrollIntoView({block: 'center'}); return true; })(%q)`, sel)
	}
	if _, err := eval[bool](ctx, js); err != nil {
		return nil, err
	}
	if err := chromedp.Do(ctx, chromedp.Sleep(300*time.Millisecond)); err != nil {
		return nil, err
	}
	type box struct{ X, Y, Width, Height, Ratio float64 }
	var b box
	if sel != "" {
		v, err := eval[*box](ctx, fmt.Sprintf(`((sel) => { const r = document.querySelector(sel).getBoundingClientRect();
  return {X: r.left, Y: r.top, Width: r.width, Height: r.height, Ratio: window.devicePixelRatio || 1}; })(%q)`, sel))
		if err != nil || v == nil {
			return nil, fmt.Errorf("finding %s: %v", sel, err)
		}
		b = *v
	}
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil || sel == "" {
		return shot, err
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		return nil, fmt.Errorf("decoding the screenshot: %w", err)
	}
	const margin = 6
	px := func(v float64) int { return int(v * b.Ratio) }
	r := image.Rect(px(b.X-margin), px(b.Y-margin), px(b.X+b.Width+margin), px(b.Y+b.Height+margin)).Intersect(img.Bounds())
	if r.Empty() {
		return nil, fmt.Errorf("%s is not on the screen (box %+v)", sel, b)
	}
	cut := image.NewRGBA(image.Rect(0, 0, r.Dx(), r.Dy()))
	draw.Draw(cut, cut.Bounds(), img, r.Min, draw.Src)
	var buf bytes.Buffer
	if err := png.Encode(&buf, cut); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// cellAt labels cell i of cs, or says only its index when cs does not hold it.
func cellAt(cs []cellState, i int) string {
	for _, c := range cs {
		if c.Index == i {
			return c.label()
		}
	}
	return fmt.Sprintf("cell %d", i)
}

// interrupt interrupts the kernels of the sessions open on path.
func (s jupyterAPI) interrupt(path string) error {
	var sessions []struct {
		Path   string `json:"path"`
		Kernel struct {
			ID string `json:"id"`
		} `json:"kernel"`
	}
	if _, err := s.api("GET", "/api/sessions", &sessions); err != nil {
		return err
	}
	for _, ss := range sessions {
		if ss.Path == path {
			if _, err := s.api("POST", "/api/kernels/"+ss.Kernel.ID+"/interrupt", nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitFor calls done every 250 ms until it reports true, fails, or limit passes.
func waitFor(ctx context.Context, limit time.Duration, done func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	for {
		ok, err := done()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func sumOf(path string) ([32]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(b), nil
}

func writeFile(dir, name string, b []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		return "", err
	}
	return p, nil
}

func TestMissingSays(t *testing.T) {
	doc := `{"cells": [
 {"cell_type": "markdown", "source": "strideZero in prose", "outputs": []},
 {"cell_type": "code", "source": ["var strideZero = 1\n", "x"], "outputs": [
  {"output_type": "display_data", "data": {"text/html": "<div>Your naive did not finish: &#34;add&#34;</div>"}},
  {"output_type": "error", "ename": "exit status 3", "evalue": ""}]}]}`
	got, err := missingSays(doc, []cellSays{
		{"strideZero", []string{`did not finish: "add"`, "exit status 3"}},
		{"strideZero", []string{"faulted"}},
		{"nullRead", []string{"x"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !strings.Contains(got[0], `does not say "faulted"`) || !strings.Contains(got[1], `no code cell holds "nullRead"`) {
		t.Errorf("problems %q: want the missing text and the missing cell", got)
	}
}

// Package notebooks holds the suite's notebooks. Its tests use them as a reader does: Jupyter started
// by .ci/jupyter.sh (what `make notebooks` runs), each notebook opened in headless Chromium, its
// outputs cleared, Run All, and the rendered page checked: every code cell ran and showed output
// (cells of only shell commands and magics, like the first, may be silent), no error output and no
// Go panic (.ci/check_notebook.py on the executed copy), the gonb kernel, the mode banner, a plot
// and a table. Screenshots and the executed copies go to .scratch/browser/; the notebooks
// themselves are never saved.
//
// hub_test.go does the same for a class: the classroom hub (make hub) with three students logged in
// through the browser, each running notebook 00 in their own copy at the same time.
//
// The tests run when KERNELS_BROWSER_TEST=1 (make test sets it): they take minutes. Without a
// browser or Jupyter they skip, saying so; with KERNELS_BROWSER_TEST=1 that is a failure instead.
// KERNELS_NOTEBOOK_LIMIT (a Go duration) overrides the time limit per notebook.
package notebooks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// suite is what every browser test needs: the project root, the browser and the mode.
type suite struct {
	root, chrome, mode string
}

func needSuite(t *testing.T) suite {
	t.Helper()
	required := os.Getenv("KERNELS_BROWSER_TEST") == "1"
	missing := func(what string) {
		if required {
			t.Fatalf("%s: KERNELS_BROWSER_TEST=1 needs it (.ci/setup.sh installs it on Debian)", what)
		}
		t.Skipf("%s: the notebooks' browser test is skipped (.ci/setup.sh installs what it needs on Debian)", what)
	}
	chrome, err := findBrowser()
	if err != nil {
		missing(err.Error())
	}
	for _, tool := range []string{"jupyter", "jupyter-notebook"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing(fmt.Sprintf("no %s on PATH", tool))
		}
	}
	if !required {
		t.Skip("the notebooks' browser test runs every notebook in headless Chromium (minutes): set KERNELS_BROWSER_TEST=1 to run it (make test does)")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	mode, err := exec.Command("bash", filepath.Join(root, ".ci/mode.sh")).Output()
	if err != nil {
		t.Fatalf(".ci/mode.sh: %v", err)
	}
	return suite{root: root, chrome: chrome, mode: strings.TrimSpace(string(mode))}
}

func (s suite) script() string { return filepath.Join(s.root, ".ci/jupyter.sh") }

// checker is the command of .ci/check_notebook.py, run by the Python that runs Jupyter (it has
// nbformat; another python3 on PATH may not).
func (s suite) checker() []string {
	python := "python3"
	if p, err := exec.LookPath("jupyter"); err == nil {
		if b, err := os.ReadFile(p); err == nil {
			line, _, _ := strings.Cut(string(b), "\n")
			if f := strings.Fields(strings.TrimPrefix(line, "#!")); strings.HasPrefix(line, "#!") && len(f) > 0 {
				python = f[0]
				if filepath.Base(python) == "env" && len(f) > 1 {
					python = f[1]
				}
			}
		}
	}
	return []string{python, filepath.Join(s.root, ".ci/check_notebook.py")}
}

// banner is how the mode banner (lab.Env.Banner) starts in this mode.
func (s suite) banner() string {
	if s.mode == "gpu" {
		return "GPU mode: "
	}
	return "No-GPU mode ("
}

// runLimit is the time limit of one notebook's Run All: KERNELS_NOTEBOOK_LIMIT, else 5 minutes
// without a GPU (notebooks take 20-40 s there) and 20 with one (they measure); never past the test's
// own deadline, so that a hang fails here, with the server stopped, rather than in go test's panic.
func (s suite) runLimit(t *testing.T) time.Duration {
	limit := 5 * time.Minute
	if s.mode == "gpu" {
		limit = 20 * time.Minute
	}
	if v := os.Getenv("KERNELS_NOTEBOOK_LIMIT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("KERNELS_NOTEBOOK_LIMIT=%q: want a positive Go duration such as 10m", v)
		}
		limit = d
	}
	if dl, ok := t.Deadline(); ok {
		if left := time.Until(dl) - 4*time.Minute; left < limit {
			limit = max(left, 10*time.Second)
		}
	}
	return limit
}

// startFor starts a server through the suite's script and stops it when t ends, failing t if the
// stop leaves anything behind.
//
// leftoversExpected says that the test kills a kernel on purpose: the processes the kernel had
// started are then orphaned (gonb's gopls), killed by Stop and only logged.
func (s suite) startFor(t *testing.T, args []string, log string, leftoversExpected bool) *server {
	t.Helper()
	srv, err := startServer(s.script(), args, log, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		left, err := srv.Stop()
		if err != nil {
			t.Error(err)
		}
		if srv.Alive() {
			t.Errorf("the jupyter server (pid %d) is still running", srv.Pid())
		}
		if len(left) > 0 {
			report := t.Errorf
			if leftoversExpected {
				report = t.Logf
			}
			report("processes of the jupyter server outlived it and were killed: %s", strings.Join(left, ", "))
		}
		t.Logf("jupyter server (pid %d) stopped", srv.Pid())
	})
	t.Logf("jupyter server pid %d on %s, %s mode (log %s)", srv.Pid(), srv.URL, s.mode, log)
	return srv
}

func TestNotebooksInBrowser(t *testing.T) {
	s := needSuite(t)
	dir := filepath.Join(s.root, "notebooks")
	names, err := filepath.Glob(filepath.Join(dir, "*.ipynb"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no notebooks in %s (%v)", dir, err)
	}
	sort.Strings(names)
	out := filepath.Join(s.root, ".scratch", "browser")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	// Opening a notebook makes Jupyter create notebooks/.ipynb_checkpoints/ (empty: nothing is
	// saved); the test leaves the folder as it found it.
	checkpoints := filepath.Join(dir, ".ipynb_checkpoints")
	if _, err := os.Stat(checkpoints); os.IsNotExist(err) {
		t.Cleanup(func() { _ = os.Remove(checkpoints) }) // only when empty
	}
	srv := s.startFor(t, nil, filepath.Join(out, "jupyter.log"), false)
	bctx, cancel, err := startBrowser(s.chrome, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()

	var times []string
	for _, path := range names {
		name := filepath.Base(path)
		t.Run(strings.TrimSuffix(name, ".ipynb"), func(t *testing.T) {
			lim := limits{Load: 2 * time.Minute, Run: s.runLimit(t), Logf: t.Logf}
			want := check{Banner: s.banner(), Rendering: true, Checker: s.checker(), SASS: walksSteps(t, path)}
			if name == mistakesNotebook {
				// Its outputs are messages and compile reports: no plot; each mistake says its own.
				want.Rendering, want.Says = false, mistakesSay(s.mode)
			}
			r, err := runNotebook(bctx, srv.target(), dir, name, lim, want, out)
			if r != nil && r.Took > 0 {
				line := fmt.Sprintf("%s: %.1f s, %d code cells ran, %d plots, %d tables", name, r.Took.Seconds(), r.CodeCells, r.Plots, r.Tables)
				times = append(times, line)
				t.Log(line)
				t.Logf("banner: %.100s", r.Banner)
				for _, f := range r.Files {
					t.Logf("wrote %s", f)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	if err := os.WriteFile(filepath.Join(out, "times.txt"), []byte(strings.Join(times, "\n")+"\n"), 0o644); err != nil {
		t.Error(err)
	}
}

// walkCall is a lesson's Walk called in a cell (Walk, or lesson 04's WalkSoftmax and
// WalkLayerNorm): it shows each step's SASS count table.
var walkCall = regexp.MustCompile(`\b[a-z]+\.Walk[A-Za-z]*\(env\b`)

// walksSteps reports whether the notebook at path walks its lesson's steps (a cell calls a lesson's
// Walk), so that its page must show a SASS count table.
func walksSteps(t *testing.T, path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return walkCall.Match(b)
}

// mistakesNotebook makes the common mistakes of a reader's kernel on purpose.
const mistakesNotebook = "09_mistakes.ipynb"

// mistakesSay is what each cell of the mistakes notebook must say in a mode ("gpu" or "nogpu"),
// by the name of the kernel's variable in its source. Without a GPU the mistakes a compiler can see
// give their messages and the others say that running needs a GPU; with one, each gives its own
// (the deadline, the fault, the sanitizer's report), and the cell after a deadline or a fault runs.
func mistakesSay(mode string) []cellSays {
	both := []cellSays{
		{"hugeShared", []string{"kernel add_naive cannot run", "400000 bytes (390.6 KiB) of static shared memory", "at most 49152 bytes (48 KiB)", "uses too much shared data"}},
		{"gpu.D1(2048)", []string{"block 2048 has 2048 threads, over the device's limit of 1024 threads per block"}},
		{"missingSemicolon", []string{`error: expected a ";"`, "1_naive.cu, line 4:"}},
		{"wrongName", []string{`kernel "add_naive" not found in the module`, `extern "C"`}},
	}
	if mode != "gpu" {
		needs := []string{"needs a GPU"}
		return append(both,
			cellSays{"strideZero", needs}, cellSays{"nullRead", needs}, cellSays{"pastTheEnd", needs},
			cellSays{"onePast", needs}, cellSays{"divergentBarrier", needs}, cellSays{"sharedRace", needs},
			cellSays{`vecadd.Try(env, "naive", "")`, []string{"The original naive compiled"}})
	}
	return append(both,
		cellSays{"strideZero", []string{"Your naive did not finish", "Still running: kernel add_naive (grid", "grid-stride loop whose stride is 0"}},
		cellSays{"nullRead", []string{"Your naive faulted on the GPU: an illegal memory address", "in kernel add_naive (grid", "context is lost"}},
		cellSays{"vecadd.Sanitize(env, \"naive\", pastTheEnd", []string{"memcheck found", "Invalid __global__", "line 5"}},
		cellSays{"vecadd.Sanitize(env, \"naive\", onePast", []string{"memcheck found", "Invalid __global__ read", "line 5"}},
		cellSays{"divergentBarrier", []string{"compute-sanitizer synccheck"}},
		cellSays{"sharedRace", []string{"racecheck found"}},
		cellSays{`vecadd.Try(env, "naive", "")`, []string{"the original naive"}})
}

// TestBrowserFaults proves the browser test fails clearly, within its limits and with the server
// stopped, when Jupyter never starts, a notebook does not exist, the kernel dies, a cell hangs or a
// cell does not compile.
func TestBrowserFaults(t *testing.T) {
	s := needSuite(t)
	out := filepath.Join(s.root, ".scratch", "browser", "faults")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}

	t.Run("server exits at start", func(t *testing.T) {
		srv, err := startServer(s.script(), []string{"--notebook-dir=/nonexistent/notebooks"}, filepath.Join(out, "exits.log"), time.Minute)
		expectError(t, err, "exited before answering", "/nonexistent/notebooks")
		if srv != nil && srv.Alive() {
			t.Errorf("server pid %d still running", srv.Pid())
		}
	})

	t.Run("server never answers", func(t *testing.T) {
		fake := filepath.Join(t.TempDir(), "silent.sh")
		if err := os.WriteFile(fake, []byte("exec sleep 300\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		srv, err := startServer(fake, nil, filepath.Join(out, "silent.log"), 3*time.Second)
		expectError(t, err, "did not answer", "within 3s")
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("failing took %v", took)
		}
		if srv == nil || srv.Alive() {
			t.Errorf("the silent server was not stopped")
		}
	})

	dir := t.TempDir()
	srv := s.startFor(t, []string{"--notebook-dir=" + dir}, filepath.Join(out, "jupyter.log"), true)
	bctx, cancel, err := startBrowser(s.chrome, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	lim := limits{Load: 2 * time.Minute, Run: 2 * time.Minute}

	t.Run("notebook does not exist", func(t *testing.T) {
		_, err := runNotebook(bctx, srv.target(), dir, "no_such_notebook.ipynb", lim, check{}, out)
		expectError(t, err, "no_such_notebook.ipynb does not exist")
	})

	t.Run("kernel dies", func(t *testing.T) {
		writeNotebook(t, dir, "dies.ipynb", "!echo started", "!sleep 1 && kill -9 $PPID", "!echo never")
		_, err := runNotebook(bctx, srv.target(), dir, "dies.ipynb", lim, check{}, out)
		expectError(t, err, "kernel died", "cell 1 (")
	})

	t.Run("cell hangs", func(t *testing.T) {
		writeNotebook(t, dir, "hangs.ipynb", "!echo started", "!sleep 300", "!echo never")
		start := time.Now()
		_, err := runNotebook(bctx, srv.target(), dir, "hangs.ipynb", limits{Load: lim.Load, Run: 10 * time.Second}, check{}, out)
		expectError(t, err, `cell 1 ("!sleep 300") still running after 10s`)
		if took := time.Since(start); took > 90*time.Second {
			t.Errorf("failing took %v", took)
		}
	})

	t.Run("cell does not compile", func(t *testing.T) {
		name, broken := brokenCopy(t, s.root, dir)
		_, err := runNotebook(bctx, srv.target(), dir, name, lim, check{Checker: s.checker()}, out)
		expectError(t, err, fmt.Sprintf("cell %d", broken))
	})

	if !srv.answers("/api/status?token=" + srv.Token) {
		t.Errorf("the fault server stopped answering")
	}
}

func expectError(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one saying %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error does not say %q:\n%v", p, err)
		}
	}
	t.Logf("failed as it should:\n%v", err)
}

// writeNotebook writes a gonb notebook of code cells into dir.
func writeNotebook(t *testing.T, dir, name string, cells ...string) {
	t.Helper()
	nb := map[string]any{
		"nbformat": 4, "nbformat_minor": 5,
		"metadata": map[string]any{"kernelspec": map[string]any{"name": "gonb", "display_name": "Go (gonb)", "language": "go"}},
	}
	var cs []map[string]any
	for i, src := range cells {
		cs = append(cs, map[string]any{"cell_type": "code", "id": fmt.Sprintf("c%d", i), "metadata": map[string]any{},
			"execution_count": nil, "outputs": []any{}, "source": src})
	}
	nb["cells"] = cs
	b, err := json.MarshalIndent(nb, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// brokenCopy copies the first notebook into dir with a Go syntax error in its middle Go cell; the
// copy's setup cell points at the project root (the copy is not beside it). It returns the copy's
// name and the broken cell's index.
func brokenCopy(t *testing.T, root, dir string) (string, int) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(root, "notebooks", "*.ipynb"))
	if len(names) == 0 {
		t.Fatal("no notebook to copy")
	}
	sort.Strings(names)
	b, err := os.ReadFile(names[0])
	if err != nil {
		t.Fatal(err)
	}
	var nb map[string]any
	if err := json.Unmarshal(b, &nb); err != nil {
		t.Fatal(err)
	}
	cells := nb["cells"].([]any)
	text := func(c map[string]any) string {
		switch v := c["source"].(type) {
		case string:
			return v
		case []any:
			var sb strings.Builder
			for _, l := range v {
				sb.WriteString(l.(string))
			}
			return sb.String()
		}
		return ""
	}
	var goCells []int
	for i, c := range cells {
		c := c.(map[string]any)
		if c["cell_type"] != "code" {
			continue
		}
		if src := text(c); setupOnly(src) {
			c["source"] = strings.ReplaceAll(src, `"${GONB_DIR}/.."`, `"`+root+`"`)
		} else {
			goCells = append(goCells, i)
		}
	}
	if len(goCells) < 2 {
		t.Fatalf("%s has fewer than two Go cells", names[0])
	}
	broken := goCells[len(goCells)/2]
	c := cells[broken].(map[string]any)
	c["source"] = text(c) + "\n\nfunc brokenOnPurpose( {\n"
	name := "broken_" + filepath.Base(names[0])
	b, err = json.Marshal(nb)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return name, broken
}

// The notebooks that walk their steps are the ones that must show a SASS table: 00 walks vecadd's
// steps, the mistakes notebook only tries kernels.
func TestWalksSteps(t *testing.T) {
	if !walksSteps(t, "00_setup.ipynb") || !walksSteps(t, "03_matmul.ipynb") {
		t.Error("00 and 03 walk their steps")
	}
	if !walksSteps(t, "04_softmax.ipynb") || !walksSteps(t, "04b_layernorm.ipynb") {
		t.Error("both notebooks of lesson 04 walk their steps")
	}
	if walksSteps(t, mistakesNotebook) {
		t.Error("the mistakes notebook walks no step")
	}
}

// jsDiagram finds the first diagram of the page (a markdown cell's image from notebooks/figures/),
// marks it for its screenshot and says whether it exists and whether it loaded (naturalWidth > 0).
const jsDiagram = `(() => {
  const img = document.querySelector('#notebook .text_cell_render img[src*="figures/"]');
  if (!img) return {found: false, loaded: false, src: ''};
  img.setAttribute('data-browser-test-diagram', '1');
  return {found: true, loaded: img.complete && img.naturalWidth > 0, src: img.getAttribute('src')};
})()`

// diagramShot saves a screenshot of the notebook's first diagram as <stem>-diagram.png in out, after
// checking that the image loaded. A notebook without diagrams gives no file and no error.
func diagramShot(ctx context.Context, out, stem string) (string, error) {
	type found struct {
		Found, Loaded bool
		Src           string
	}
	var d found
	deadline := time.Now().Add(15 * time.Second)
	for {
		v, err := eval[found](ctx, jsDiagram)
		if err != nil {
			return "", fmt.Errorf("finding the first diagram: %w", err)
		}
		if d = v; !d.Found {
			return "", nil
		}
		if d.Loaded {
			break
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the diagram %s did not load (naturalWidth 0)", d.Src)
		}
		if err := chromedp.Do(ctx, chromedp.Sleep(300*time.Millisecond)); err != nil {
			return "", err
		}
	}
	shot, err := screenshot(ctx, `[data-browser-test-diagram]`)
	if err != nil {
		return "", fmt.Errorf("screenshot of the diagram %s: %w", d.Src, err)
	}
	return writeFile(out, stem+"-diagram.png", shot)
}

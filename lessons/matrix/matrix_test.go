package matrix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// notebookJSON is a small executed notebook: a markdown cell, an ok cell, a cell showing an error
// through helpers/show, a refusal note, a cell with a Go panic on stderr, a cell that never ran and
// a cell whose error is expected (tagged raises-exception).
const notebookJSON = `{"cells": [
 {"cell_type": "markdown", "source": ["# x"]},
 {"cell_type": "code", "execution_count": 1, "outputs": [{"output_type": "display_data", "data": {"text/html": "<table><tr><td>ok</td></tr></table>"}}]},
 {"cell_type": "code", "execution_count": 2, "outputs": [{"output_type": "display_data", "data": {"text/html": ["<pre class=\"kernels-error\">kernel k: launch failed &amp; gone</pre>"]}}]},
 {"cell_type": "code", "execution_count": 3, "outputs": [{"output_type": "display_data", "data": {"text/html": "<div>Not on this GPU: a.cu needs compute capability 8.0</div>"}}]},
 {"cell_type": "code", "execution_count": 4, "outputs": [{"output_type": "stream", "name": "stderr", "text": ["panic: ", "index out of range"]}]},
 {"cell_type": "code", "execution_count": null, "outputs": []},
 {"cell_type": "code", "execution_count": 5, "metadata": {"tags": ["raises-exception"]}, "outputs": [{"output_type": "error", "ename": "exit status 3", "evalue": ""}]}
]}`

func TestInspectCountsCellsErrorsAndRefusals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.ipynb")
	if err := os.WriteFile(path, []byte(notebookJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	ex, err := Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Cells != 6 || ex.CellsRun != 5 || ex.Refusals != 1 || len(ex.Errors) != 2 {
		t.Fatalf("inspected %+v", ex)
	}
	if ex.Errors[0].Cell != 2 || ex.Errors[0].Message != "kernel k: launch failed & gone" || ex.Errors[1].Cell != 4 || !strings.Contains(ex.Errors[1].Message, "panic: index out of range") {
		t.Errorf("errors %+v", ex.Errors)
	}
	if _, err := Inspect(filepath.Join(t.TempDir(), "none.ipynb")); err == nil {
		t.Error("a missing notebook inspected")
	}
}

// fakeRoot is a project root with two notebooks, and a runner script that writes an executed copy:
// clean, except under the t4 profile, where notebook 01 shows an error.
func fakeRoot(t *testing.T) (root string, runner []string) {
	root = t.TempDir()
	for _, nb := range []string{"00_setup.ipynb", "01_rwkv.ipynb"} {
		if err := os.MkdirAll(filepath.Join(root, "notebooks"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "notebooks", nb), []byte(`{"cells": []}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(root, "run.sh")
	body := `#!/bin/sh
# $1 input, $2 output; the profile comes in KERNELS_EMULATE, as the matrix sets it.
test -n "$KERNELS_CACHE_DIR" || exit 3
test "$KERNELS_QUICK" = 1 || exit 4
html='<table></table>'
case "$KERNELS_EMULATE:$1" in *t4:*01_rwkv*) html='<pre class=\"kernels-error\">boom</pre>';; esac
printf '{"cells": [{"cell_type": "code", "execution_count": 1, "outputs": [{"output_type": "display_data", "data": {"text/html": "%s"}}]}]}' "$html" > "$2"
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return root, []string{"sh", script, "{in}", "{out}"}
}

func TestRunMergeAndRender(t *testing.T) {
	root, runner := fakeRoot(t)
	done := map[string]int{} // Done sees every run once, as it finishes
	res, err := Run(Config{Root: root, Profiles: []string{"t4", "a100-80"}, Runner: runner, Jobs: 3, Quick: true, Work: t.TempDir(),
		Done: func(r Result) { done[r.Profile+" "+r.Notebook]++ }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 {
		t.Fatalf("%d results, want 2 profiles x 2 notebooks", len(res))
	}
	for _, r := range res {
		if n := done[r.Profile+" "+r.Notebook]; n != 1 {
			t.Errorf("%s %s: Done called %d times, want 1", r.Profile, r.Notebook, n)
		}
	}
	for _, r := range res {
		wantOK := !(r.Profile == "t4" && r.Notebook == "01_rwkv.ipynb")
		if r.OK() != wantOK || r.RunnerError != "" || r.Cells != 1 {
			t.Errorf("%s %s: %+v (want ok %v)", r.Profile, r.Notebook, r, wantOK)
		}
		if r.Source != "checked" {
			t.Errorf("%s %s: nothing was measured, the steps must come from the lesson's checks: %q", r.Profile, r.Notebook, r.Source)
		}
	}
	f := &File{}
	f.Merge(res)
	again := res[:1]
	again[0].Seconds = 99
	f.Merge(again)
	if len(f.Results) != 4 || f.Results[0].Profile != "t4" || f.Results[0].Seconds != 99 || f.Results[2].Profile != "a100-80" {
		t.Errorf("merge: %+v", f.Results)
	}
	path := filepath.Join(t.TempDir(), "gpus.json")
	if err := f.Save(path); err != nil {
		t.Fatal(err)
	}
	g, err := Load(path)
	if err != nil || len(g.Results) != 4 {
		t.Fatalf("load: %v %+v", err, g)
	}
	md := Markdown(g)
	for _, want := range []string{"| `t4` |", "**1 errors**", "01_rwkv.ipynb, cell 0: **error**: boom", "| `a100-80` | ok: 1/1 cells"} {
		if !strings.Contains(md, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(md, "host GPUs") {
		t.Error("one host (here none recorded), yet the page lists the hosts")
	}
	for i := range g.Results { // runs on two GPUs: the page says which and how many
		g.Results[i].Host = []string{"GPU A", "GPU B", "GPU B", "GPU B"}[i]
	}
	if md := Markdown(g); !strings.Contains(md, "The runs' host GPUs: GPU A (1 runs), GPU B (3 runs).") {
		t.Errorf("the page does not list the runs' hosts:\n%s", md)
	}
	if _, err := Run(Config{Root: root, Profiles: []string{"b300"}, Runner: runner}); err == nil || !strings.Contains(err.Error(), "no GPU profile") {
		t.Errorf("an unknown profile: %v", err)
	}
	if _, err := Run(Config{Root: root, Notebooks: []string{"99_none.ipynb"}, Runner: runner}); err == nil {
		t.Error("a missing notebook ran")
	}
}

// A runner that cannot execute the notebook is a failed result with its output, not a success.
func TestRunnerFailureIsRecorded(t *testing.T) {
	root, _ := fakeRoot(t)
	res, err := Run(Config{Root: root, Profiles: []string{"l4"}, Notebooks: []string{"00_setup.ipynb"}, Runner: []string{"sh", "-c", "echo no kernel >&2; exit 2"}, Work: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].OK() || !strings.Contains(res[0].RunnerError, "no kernel") {
		t.Errorf("%+v", res)
	}
}

// docs/GPUS.md is what the matrix file and the lessons' checks render now: regenerate it with
// go run -tags nocuda ./cmd/gpus -render after changing a step, a need or the profiles.
func TestDocsAreCurrent(t *testing.T) {
	f, err := Load("../../results/gpus.json")
	if err != nil {
		t.Fatal(err)
	}
	want := Markdown(f)
	got, err := os.ReadFile("../../docs/GPUS.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Error("docs/GPUS.md is out of date: run `go run -tags nocuda ./cmd/gpus -render`")
	}
}

// Parts run apart (two GPUs of one machine) join into one file: every part's rows, a row of a
// later part replacing the same profile and notebook, the last part's receipt; a part of the
// other mode is refused.
func TestJoinParts(t *testing.T) {
	row := func(profile, nb, commit string) Result { return Result{Profile: profile, Notebook: nb, Commit: commit} }
	f := &File{Mode: "GPU mode", Host: "old", Results: []Result{row("t4", "00_setup.ipynb", "a"), row("l4", "01_rwkv.ipynb", "a")}}
	p1 := &File{Mode: "GPU mode", Host: "NVIDIA H200", Date: "d1", Results: []Result{row("t4", "00_setup.ipynb", "b")}}
	p2 := &File{Mode: "GPU mode", Host: "NVIDIA H200", Date: "d2", Results: []Result{row("a10", "08_hopper.ipynb", "b")}}
	if err := f.Join(p1, p2); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range f.Results {
		got[r.Profile+" "+r.Notebook] = r.Commit
	}
	want := map[string]string{"t4 00_setup.ipynb": "b", "l4 01_rwkv.ipynb": "a", "a10 08_hopper.ipynb": "b"}
	if len(got) != len(want) {
		t.Errorf("joined rows %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: commit %q, want %q", k, got[k], v)
		}
	}
	if f.Date != "d2" || f.Host != "NVIDIA H200" {
		t.Errorf("receipt %q on %q, want the last part's", f.Date, f.Host)
	}
	if err := f.Join(&File{Mode: "no-GPU mode"}); err == nil || !strings.Contains(err.Error(), "one mode per file") {
		t.Errorf("a part of the other mode: %v", err)
	}
}

// The notebooks of a matrix run take turns at the GPU through the lock the caller gives
// (KERNELS_GPU_LOCK, as .ci/record.sh sets it), else through one of the run's own when several run at once.
func TestRunKeepsTheGivenGPULock(t *testing.T) {
	root, _ := fakeRoot(t)
	script := filepath.Join(root, "lock.sh")
	body := `#!/bin/sh
test "$KERNELS_GPU_LOCK" = "$WANT_LOCK" || { echo "lock: got '$KERNELS_GPU_LOCK', want '$WANT_LOCK'" >&2; exit 5; }
printf '{"cells": [{"cell_type": "code", "execution_count": 1, "outputs": []}]}' > "$2"
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	runner := []string{"sh", script, "{in}", "{out}"}
	work := t.TempDir()
	for _, c := range []struct{ given, want string }{
		{"", filepath.Join(work, "gpu.lock")},
		{filepath.Join(t.TempDir(), "gpu0.lock"), ""},
	} {
		t.Setenv("KERNELS_GPU_LOCK", c.given)
		want := c.want
		if want == "" {
			want = c.given
		}
		res, err := Run(Config{Root: root, Profiles: []string{"t4"}, Runner: runner, Jobs: 2, Work: work, Env: []string{"WANT_LOCK=" + want}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.RunnerError != "" {
				t.Errorf("given lock %q: %s: %s", c.given, r.Notebook, r.RunnerError)
			}
		}
	}
}

//go:build !nocuda

package matrix

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// The matrix on the GPU present, by the short method: every notebook under every default profile
// (in -short mode notebook 00 under the T4 profile), each finishing with every cell run and no
// error. This is the test a reader with a GPU and CI on a GPU can repeat; cmd/gpus runs the same
// and records it.
func TestEveryNotebookUnderEveryProfile(t *testing.T) {
	if _, err := DefaultRunner(); err != nil {
		t.Skip(err)
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the notebook kernel builds every cell with go, which is not on PATH")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Root: root, Jobs: 4, Quick: true, Work: t.TempDir()}
	if testing.Short() {
		cfg.Profiles, cfg.Notebooks = []string{"t4"}, []string{"00_setup.ipynb"}
	}
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		t.Log(r.Line())
		if !r.OK() {
			t.Errorf("%s under %s: %d/%d cells ran, %d errors %v %s", r.Notebook, r.Profile, r.CellsRun, r.Cells, len(r.Errors), r.Errors, r.RunnerError)
		}
	}
}

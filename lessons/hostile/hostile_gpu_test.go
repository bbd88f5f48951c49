//go:build !nocuda

package hostile

import (
	"testing"
	"time"

	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// TestHostile runs the catalogue on the GPU (the shapes marked Short with -short, every shape
// otherwise) against the float64 references and PyTorch where it is installed, and fails on every
// case that fails; the full run must also take every path of every op.
func TestHostile(t *testing.T) {
	env := labtest.Open(t)
	opts := Options{Seed: uint64(time.Now().UnixNano()), Short: testing.Short()}
	t.Logf("seed %d (rerun a case with cmd/hostile -seed)", opts.Seed)
	rep, err := Run(env, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range rep.Summary() {
		t.Log(l)
	}
	for _, r := range rep.Failures() {
		t.Error(r.Line())
	}
	if testing.Short() {
		return
	}
	for _, op := range Catalogue() {
		for _, p := range op.Paths {
			took := false
			for _, r := range rep.Rows {
				took = took || (r.Op == op.Name && Exercises(r.Step, p))
			}
			if !took {
				t.Errorf("%s: no case took path %q on %s", op.Name, p, env.Receipt.Device.Name)
			}
		}
	}
}

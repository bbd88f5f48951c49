package lessons

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/sanitize"
	"github.com/cudalessons/cudalessons/results"
)

// The recorded sanitizer pass (results/sanitize.json, from cmd/sanitize on a GPU) ran every lesson's
// TestSanitize and helpers/gpu's under memcheck, racecheck and synccheck, cleanly, within 15 minutes,
// and each run launched every kernel of its lesson's folder as the sources are now: a new kernel,
// or a changed one, fails here until the pass is run again and recorded. README shows its summary.
func TestSanitizerPassCoversEveryKernel(t *testing.T) {
	p, err := sanitize.LoadFS(results.FS, "sanitize.json")
	if err != nil {
		t.Fatalf("no recorded sanitizer pass (make sanitize ARGS=\"-out results\" on a GPU): %v", err)
	}
	folders := KernelFolders()
	if len(folders) != len(All()) {
		t.Fatalf("%d kernel folders for %d lessons", len(folders), len(All()))
	}
	if err := p.Covers(folders); err != nil {
		t.Error(err)
	}
	now, err := sanitize.SourcesOf(folders)
	if err != nil {
		t.Fatal(err)
	}
	if changed := p.Changed(now); len(changed) > 0 {
		t.Errorf("kernel sources differ from those the recorded sanitizer pass (%s) ran: %s; run it again (make sanitize ARGS=\"-out results\")",
			p.Receipt.Date, strings.Join(changed, ", "))
	}
	for _, tool := range sanitize.Tools {
		if !slices.ContainsFunc(p.Runs, func(r sanitize.Run) bool { return r.Package == "helpers/gpu" && r.Tool == tool && r.OK() }) {
			t.Errorf("no clean %s run of helpers/gpu", tool)
		}
	}
	if failed := p.Failed(); len(failed) > 0 {
		for _, r := range failed {
			t.Errorf("recorded run failed: %s", r.Line())
		}
	}
	if p.Receipt.WallS <= 0 || p.Receipt.WallS > 15*60 {
		t.Errorf("the whole pass took %.0f s; the bound is 15 minutes", p.Receipt.WallS)
	}
	if p.Receipt.GPU == "" || p.Receipt.Sanitizer == "" || p.Receipt.Date == "" || p.Receipt.Driver == "" {
		t.Errorf("the receipt lacks the GPU, driver, sanitizer or date: %+v", p.Receipt)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range p.Summary() {
		if !strings.Contains(string(readme), line) {
			t.Errorf("README.md does not show the recorded pass's line (go run -tags nocuda ./cmd/sanitize -summary results/sanitize.json):\n%s", line)
		}
	}
}

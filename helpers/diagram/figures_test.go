package diagram

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// committed is the folder the notebooks load the diagrams from.
const committed = "../../notebooks/figures"

// TestCommittedFigures draws every diagram and fails when the committed file differs, so the
// pictures in the notebooks are always the code's (go run ./cmd/diagrams writes them).
func TestCommittedFigures(t *testing.T) {
	names := map[string]bool{}
	for _, f := range All() {
		if names[f.Name] {
			t.Errorf("two diagrams named %s", f.Name)
		}
		names[f.Name] = true
		b, err := f.Draw()
		if err != nil {
			t.Errorf("%s: %v", f.Name, err)
			continue
		}
		if err := xml.Unmarshal(b, new(struct{})); err != nil {
			t.Errorf("%s: not well-formed XML: %v", f.Name, err)
		}
		if again, _ := f.Draw(); !bytes.Equal(again, b) {
			t.Errorf("%s: two drawings differ", f.Name)
		}
		have, err := os.ReadFile(filepath.Join(committed, f.Name+".svg"))
		if err != nil {
			t.Errorf("%s: %v (run go run ./cmd/diagrams)", f.Name, err)
			continue
		}
		if !bytes.Equal(have, b) {
			t.Errorf("notebooks/figures/%s.svg differs from what the code draws: run go run ./cmd/diagrams", f.Name)
		}
	}
	// No stale file: every SVG in the folder is drawn by a diagram.
	files, err := filepath.Glob(filepath.Join(committed, "*.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range files {
		if n := strings.TrimSuffix(filepath.Base(p), ".svg"); !names[n] {
			t.Errorf("notebooks/figures/%s.svg is drawn by no diagram", n)
		}
	}
	if len(names) < 10 {
		t.Errorf("%d diagrams, want at least 10", len(names))
	}
}

// TestFiguresPlacedInNotebooks checks that every diagram is shown by a markdown cell of its notebook
// (the file's number names it) right after the cell that explains the idea, or after other
// diagrams that follow that cell.
func TestFiguresPlacedInNotebooks(t *testing.T) {
	type cell struct {
		Type   string          `json:"cell_type"`
		ID     string          `json:"id"`
		Source json.RawMessage `json:"source"`
	}
	text := func(c cell) string {
		var lines []string
		if json.Unmarshal(c.Source, &lines) == nil {
			return strings.Join(lines, "")
		}
		var s string
		_ = json.Unmarshal(c.Source, &s)
		return s
	}
	for _, f := range All() {
		// A lesson may have more than one notebook (04_softmax, 04_layernorm): the cell's id finds it.
		nbs, err := filepath.Glob("../../notebooks/" + f.Name[:3] + "*.ipynb")
		if err != nil || len(nbs) == 0 {
			t.Errorf("%s: no notebook %s*.ipynb (%v)", f.Name, f.Name[:3], err)
			continue
		}
		want := "![" + f.Alt + "](figures/" + f.Name + ".svg)"
		placed := false
		for _, path := range nbs {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var nb struct{ Cells []cell }
			if err := json.Unmarshal(b, &nb); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			for i, c := range nb.Cells {
				if c.ID != f.After {
					continue
				}
				if c.Type != "markdown" {
					t.Errorf("%s: cell %s, which it follows, is %s, not markdown", f.Name, f.After, c.Type)
				}
				for _, next := range nb.Cells[i+1:] {
					src := strings.TrimSpace(text(next))
					if next.Type != "markdown" || !strings.HasPrefix(src, "![") || !strings.Contains(src, "](figures/") {
						break
					}
					placed = placed || src == want
				}
			}
		}
		if !placed {
			t.Errorf("%s: no markdown cell %q right after cell %s of %s", f.Name, want, f.After, strings.Join(nbs, ", "))
		}
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/diagram"
)

// TestRunWritesEveryDiagram runs the command into a fresh folder and compares each file with the
// committed one in notebooks/figures/.
func TestRunWritesEveryDiagram(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "figures")
	if err := run(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range diagram.All() {
		got, err := os.ReadFile(filepath.Join(dir, f.Name+".svg"))
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		want, err := os.ReadFile(filepath.Join("../../notebooks/figures", f.Name+".svg"))
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the command's file differs from the committed one", f.Name)
		}
	}
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(filepath.Join(plain, "figures")); err == nil {
		t.Error("writing under a plain file as if it were a folder did not fail")
	}
}

// TestPlace inserts the diagrams into copies of the notebooks with their diagram cells taken out,
// and must give back the committed notebooks byte for byte; a second run changes nothing.
func TestPlace(t *testing.T) {
	dir := t.TempDir()
	nbs, err := filepath.Glob("../../notebooks/*.ipynb")
	if err != nil || len(nbs) == 0 {
		t.Fatalf("no notebooks (%v)", err)
	}
	committed := map[string][]byte{}
	for _, nb := range nbs {
		b, err := os.ReadFile(nb)
		if err != nil {
			t.Fatal(err)
		}
		committed[filepath.Base(nb)] = b
		lines := strings.Split(string(b), "\n")
		var kept []string
		for i := 0; i < len(lines); i++ {
			if lines[i] == "  {" && i+2 < len(lines) && strings.HasPrefix(lines[i+2], `   "id": "fig-`) {
				for lines[i] != "  }," && lines[i] != "  }" {
					i++
				}
				if lines[i] == "  }" { // it was the last cell
					kept[len(kept)-1] = "  }"
				}
				continue
			}
			kept = append(kept, lines[i])
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(nb)), []byte(strings.Join(kept, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	placed, err := place(dir, diagram.All())
	if err != nil {
		t.Fatal(err)
	}
	if len(placed) != len(diagram.All()) {
		t.Errorf("placed %v, want every diagram", placed)
	}
	for name, want := range committed {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: placing the diagrams did not give the committed notebook", name)
		}
	}
	if again, err := place(dir, diagram.All()); err != nil || len(again) != 0 {
		t.Errorf("a second run placed %v (%v), want nothing", again, err)
	}
	if _, err := place(t.TempDir(), diagram.All()[:1]); err == nil {
		t.Error("placing into a folder without the notebook did not fail")
	}
}

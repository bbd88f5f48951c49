package main

import (
	"bytes"
	"os"
	"path/filepath"
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

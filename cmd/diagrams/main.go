// Command diagrams draws the notebooks' diagrams (helpers/diagram) into notebooks/figures/, one SVG
// file each. helpers/diagram's test fails when a committed file differs from what the code draws, so
// run this after changing a diagram:
//
//	go run ./cmd/diagrams
//
// With -place notebooks it also inserts a markdown cell showing each diagram that no cell shows yet,
// right after the cell that explains the idea (only new cells: the others are left as they are).
// With -list it prints where each diagram goes instead: its name, the id of the markdown cell it
// follows in its notebook, and its alt text.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cudalessons/cudalessons/helpers/diagram"
)

func main() {
	out := flag.String("out", "notebooks/figures", "folder the SVG files go to")
	notebooks := flag.String("place", "", "also insert a markdown cell showing each diagram that no cell shows yet into the notebooks of this folder (notebooks), after the cell it explains")
	list := flag.Bool("list", false, "print each diagram's name, the id of the notebook cell it follows and its alt text, tab-separated, and draw nothing")
	flag.Parse()
	if *list {
		for _, f := range diagram.All() {
			fmt.Printf("%s\t%s\t%s\n", f.Name, f.After, f.Alt)
		}
		return
	}
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "diagrams:", err)
		os.Exit(1)
	}
	if *notebooks != "" {
		placed, err := place(*notebooks, diagram.All())
		for _, n := range placed {
			fmt.Println("placed", n)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "diagrams:", err)
			os.Exit(1)
		}
	}
}

func run(out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, f := range diagram.All() {
		b, err := f.Draw()
		if err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		path := filepath.Join(out, f.Name+".svg")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", path)
	}
	return nil
}

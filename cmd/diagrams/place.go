package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/diagram"
)

// place inserts, into the notebooks of dir, a markdown cell showing each diagram that no cell shows
// yet, right after the cell it explains (and after the diagrams already there). It edits the
// notebook's text (nbformat 4 as Jupyter writes it, one-space indent) rather than re-encoding it, so
// nothing else in the file changes. It returns the diagrams placed.
func place(dir string, figs []diagram.Figure) ([]string, error) {
	var placed []string
	for _, f := range figs {
		nbs, err := filepath.Glob(filepath.Join(dir, f.Name[:3]+"*.ipynb"))
		if err != nil {
			return placed, err
		}
		done := false
		for _, nb := range nbs {
			b, err := os.ReadFile(nb)
			if err != nil {
				return placed, err
			}
			text := string(b)
			if strings.Contains(text, "](figures/"+f.Name+".svg)") {
				done = true
				break
			}
			lines := strings.Split(text, "\n")
			at := -1
			for i, l := range lines {
				if l == fmt.Sprintf(`   "id": %q,`, f.After) {
					at = i
				}
			}
			if at < 0 {
				continue
			}
			end := cellEnd(lines, at)
			for end+3 < len(lines) && strings.HasPrefix(lines[end+3], `   "id": "fig-`) {
				end = cellEnd(lines, end+1)
			}
			src, _ := json.Marshal("![" + f.Alt + "](figures/" + f.Name + ".svg)")
			id, _ := json.Marshal("fig-" + strings.ReplaceAll(f.Name, "_", "-"))
			cell := []string{"  {", `   "cell_type": "markdown",`, `   "id": ` + string(id) + ",", `   "metadata": {},`, `   "source": [`, "    " + string(src), "   ]", "  },"}
			if lines[end] == "  }" { // the last cell: the new one closes the list
				lines[end], cell[len(cell)-1] = "  },", "  }"
			}
			lines = append(lines[:end+1], append(cell, lines[end+1:]...)...)
			out := strings.Join(lines, "\n")
			if !json.Valid([]byte(out)) {
				return placed, fmt.Errorf("%s: placing %s would break the notebook's JSON", nb, f.Name)
			}
			if err := os.WriteFile(nb, []byte(out), 0o644); err != nil {
				return placed, err
			}
			placed, done = append(placed, f.Name), true
			break
		}
		if !done {
			return placed, fmt.Errorf("%s: no notebook %s*.ipynb in %s has the cell %s it follows", f.Name, f.Name[:3], dir, f.After)
		}
	}
	return placed, nil
}

// cellEnd is the index of the line that closes the cell holding line i.
func cellEnd(lines []string, i int) int {
	for i < len(lines) && lines[i] != "  }," && lines[i] != "  }" {
		i++
	}
	return i
}

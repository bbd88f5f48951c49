package notebooks

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Kernel declarations: a kernel's declaration up to its body, and in it the words before a
// parenthesis, of which the kernel's name is the last (launch bounds and cluster sizes come first).
var (
	kernelHead = regexp.MustCompile(`__global__[^{]*`)
	callWord   = regexp.MustCompile(`(\w+)\s*\(`)
	rawString  = regexp.MustCompile("(?s)= `(.*?)`")
)

// kernelNames are the kernels source defines.
func kernelNames(source string) []string {
	var out []string
	for _, h := range kernelHead.FindAllString(source, -1) {
		if w := callWord.FindAllStringSubmatch(h, -1); len(w) > 0 {
			out = append(out, w[len(w)-1][1])
		}
	}
	return out
}

// A cell that hands the reader a step's file to edit (var myConv = `...`, the file whole, its
// header comment first) starts from the file as it is now: a step changed under it would leave the
// reader editing, and Try comparing against, a kernel the lesson no longer runs, whose launch may
// not even fit the new plan. A copy is a cell's source that starts with a header comment (the step
// file's first line, or a changed one) and defines a kernel of a step file; exercises built on a
// step, which leave a gap on purpose, mark it with a TODO or name their kernels their own way, and the readers' edits of a kernel alone (no
// header) are not copies.
func TestCellCopiesOfStepsAreCurrent(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "kernels", "*", "*.cu"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no kernel files (%v)", err)
	}
	byFirst, text := map[string][]string{}, map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text[f] = string(b)
		first, _, _ := strings.Cut(string(b), "\n")
		byFirst[first] = append(byFirst[first], f)
	}
	// copyOf is the step file body is a copy of, if it is one.
	copyOf := func(body string) (string, bool) {
		first, _, _ := strings.Cut(body, "\n")
		if strings.Contains(body, "TODO") {
			return "", false
		}
		candidates := byFirst[first]
		if strings.HasPrefix(body, "//") { // a header of its own: any file whose kernels it defines
			candidates = files
		}
		for _, f := range candidates {
			for _, k := range kernelNames(text[f]) {
				if slices.Contains(kernelNames(body), k) {
					return f, true
				}
			}
		}
		return "", false
	}
	copies := 0
	for _, p := range lessonNotebooks(t) {
		for i, c := range notebookCells(t, p) {
			if c.CellType != "code" {
				continue
			}
			for _, m := range rawString.FindAllStringSubmatch(joinText(c.Source), -1) {
				f, ok := copyOf(m[1])
				if !ok {
					continue
				}
				copies++
				if text[f] != m[1] {
					t.Errorf("%s cell %d: the copy of %s handed to the reader differs from the file: copy the step's file into the cell again", p, i, filepath.ToSlash(f))
				}
			}
		}
	}
	if copies == 0 {
		t.Error("no cell hands the reader a copy of a step: the scan found nothing to check")
	}
}

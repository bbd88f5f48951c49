package compile

import (
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// Files is a folder of CUDA sources embedded in a kernels package, one file per step.
type Files struct {
	FS  fs.FS
	Pkg string // for messages, e.g. "kernels/rwkv"
}

// Source returns one file as a Source named by its path, e.g. "3_batch_group.cu".
func (f Files) Source(file string) (Source, error) {
	b, err := fs.ReadFile(f.FS, file)
	if err != nil {
		return Source{}, fmt.Errorf("%s: no file %s (files: %v)", f.Pkg, file, f.List())
	}
	return Source{Name: file, Code: string(b)}, nil
}

// List is every file in the folder and below, sorted.
func (f Files) List() []string {
	var out []string
	fs.WalkDir(f.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, path)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// Steps is every file of the folder outside solutions/ (the exercises' solutions), sorted: what a
// notebook compiles to show that every step builds.
func (f Files) Steps() []string {
	var out []string
	for _, file := range f.List() {
		if !strings.HasPrefix(file, "solutions/") {
			out = append(out, file)
		}
	}
	return out
}

// CodeOf returns a function that reads one file's code: an exercise's Solution (lab.Exercise), kept
// in the lesson's kernel folder under solutions/, out of the notebook.
func (f Files) CodeOf(file string) func() (string, error) {
	return func() (string, error) {
		src, err := f.Source(file)
		return src.Code, err
	}
}

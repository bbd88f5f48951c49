// Package sanitize is the record of a compute-sanitizer pass over the suite's GPU tests (cmd/sanitize
// runs it, results/sanitize.json keeps it) and the rule that makes it cover every kernel: each
// extern "C" kernel of every .cu file of a lesson's kernel folder must have been launched under each
// tool.
package sanitize

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
)

// Kernel is one extern "C" kernel of a kernel folder: its file (as compile.Files names it) and name.
type Kernel struct {
	File, Name string
}

func (k Kernel) String() string { return k.File + ": " + k.Name }

// KernelsOf lists every kernel of every .cu file of dir (its subfolders too: the exercises'
// solutions), by file and then in the order each file defines them.
func KernelsOf(dir compile.Files) ([]Kernel, error) {
	var out []Kernel
	for _, f := range dir.List() {
		if !strings.HasSuffix(f, ".cu") {
			continue
		}
		src, err := dir.Source(f)
		if err != nil {
			return nil, err
		}
		for _, name := range compile.Kernels(src.Code) {
			out = append(out, Kernel{File: f, Name: name})
		}
	}
	return out, nil
}

// Launched reports whether k is among the launches: a launch of the same name from the same file,
// or, for an exercise's solution (a file under solutions/), from the name the exercise check compiles
// a reader's code under (lab.ExerciseSource).
func (k Kernel) Launched(launches []gpu.Launch) bool {
	return slices.ContainsFunc(launches, func(l gpu.Launch) bool {
		if l.Kernel != k.Name || l.Count < 1 {
			return false
		}
		return l.Source == k.File || strings.HasPrefix(k.File, "solutions/") && l.Source == lab.ExerciseSource(k.Name)
	})
}

// Missing lists the kernels of dir that launches do not include.
func Missing(dir compile.Files, launches []gpu.Launch) ([]Kernel, error) {
	all, err := KernelsOf(dir)
	if err != nil {
		return nil, err
	}
	var out []Kernel
	for _, k := range all {
		if !k.Launched(launches) {
			out = append(out, k)
		}
	}
	return out, nil
}

// MissingError is nil when launches cover every kernel of dir, else an error listing those not
// launched.
func MissingError(dir compile.Files, launches []gpu.Launch) error {
	missing, err := Missing(dir, launches)
	if err != nil {
		return err
	}
	if len(missing) == 0 {
		return nil
	}
	list := make([]string, len(missing))
	for i, k := range missing {
		list[i] = k.String()
	}
	return fmt.Errorf("%s: %d kernel(s) never launched: %s", dir.Pkg, len(missing), strings.Join(list, "; "))
}

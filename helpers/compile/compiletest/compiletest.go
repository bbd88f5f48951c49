// Package compiletest is the test every kernels package runs on its folder without a GPU: each file
// starts with its header comment, compiles with NVRTC for each architecture in each of its builds
// without a warning, and declares the kernels its lesson looks up.
package compiletest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

// Archs are the architectures a folder compiles for unless it says otherwise: Ampere and Hopper.
var Archs = []string{"compute_80", "compute_90"}

// Folder is what a kernels package's test knows of its folder.
type Folder struct {
	Dir compile.Files
	// Archs the files compile for; Archs (the package's) when empty.
	Archs []string
	// Kernels are, for every file of the folder (solutions included), the kernels the lesson looks
	// up in it; a file of the folder that it does not list fails the check, as does a listed file
	// that the folder lacks.
	Kernels map[string][]string
	// Builds are the define sets a file also compiles with, beside its default build: the variants
	// and tuning builds its lesson measures.
	Builds map[string][][]string
	// Warnings are the builds known to draw NVRTC warnings, named "file [defines]" as a failure
	// names them ("9_split.cu [HI_ONLY]"), with why they are left. Their warnings are logged, and
	// such a build that no longer warns fails the check, so that its entry goes with the warning.
	Warnings map[string]string
}

// Check compiles every file of f in every build for every architecture (the results are cached in
// a temporary KERNELS_CACHE_DIR, not the user's) and fails t for each file that lacks its header
// comment, does not compile, draws an NVRTC warning (but those f knows of) or lacks a kernel f
// lists for it.
func Check(t testing.TB, f Folder) {
	t.Helper()
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	archs := f.Archs
	if len(archs) == 0 {
		archs = Archs
	}
	files := f.Dir.List()
	for file := range f.Kernels {
		if !slices.Contains(files, file) {
			t.Errorf("%s: the test lists %s, which the folder lacks (files: %v)", f.Dir.Pkg, file, files)
		}
	}
	for _, file := range files {
		want, ok := f.Kernels[file]
		if !ok {
			t.Errorf("%s: %s is not in the test's list of files and their kernels", f.Dir.Pkg, file)
		}
		src, err := f.Dir.Source(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(src.Code, "//") {
			t.Errorf("%s: the file should start with a comment saying what changed and why", file)
		}
		for _, defs := range append([][]string{nil}, f.Builds[file]...) {
			for _, arch := range archs {
				res, err := compile.PTX(src, compile.Options{Arch: arch, Defines: defs})
				if err != nil {
					t.Errorf("%s %v for %s: %v", file, defs, arch, err)
					continue
				}
				build := fmt.Sprintf("%s %v", file, defs)
				log := strings.Trim(res.Log, " \t\r\n\x00")
				if why, known := f.Warnings[build]; known {
					if log == "" {
						t.Errorf("%s for %s draws no warning now: take it out of the test's known warnings (%s)", build, arch, why)
					} else {
						t.Logf("%s for %s: known NVRTC warnings (%s):\n%s", build, arch, why, log)
					}
				} else if log != "" {
					t.Errorf("%s for %s: NVRTC warnings:\n%s", build, arch, log)
				}
				for _, k := range want {
					if !strings.Contains(res.PTX, ".entry "+k+"(") {
						t.Errorf("%s for %s: no kernel %s in the PTX", build, arch, k)
					}
				}
			}
		}
	}
}

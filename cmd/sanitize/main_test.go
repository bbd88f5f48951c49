package main

import (
	"slices"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/sanitize"
	"github.com/cudalessons/cudalessons/lessons"
)

// The pass finds helpers/gpu and every lesson package by their TestSanitize: a lesson without one
// would leave its kernels out of the pass.
func TestEveryLessonHasATestSanitize(t *testing.T) {
	targets, err := findTargets([]string{"../../..."})
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, tg := range targets {
		found = append(found, tg.rel)
	}
	want := []string{"helpers/gpu"}
	for _, d := range lessons.KernelFolders() {
		want = append(want, sanitize.PackageOf(d))
	}
	for _, w := range want {
		if !slices.Contains(found, w) {
			t.Errorf("%s has no %s (found %v)", w, sanitize.TestName, found)
		}
	}
}

func TestNewestToolkitFirst(t *testing.T) {
	paths := []string{"/usr/local/cuda-11.8/bin/compute-sanitizer", "/usr/local/cuda-13.0/bin/compute-sanitizer", "/usr/local/cuda-12.10/bin/compute-sanitizer", "/usr/local/cuda-12.9/bin/compute-sanitizer"}
	slices.SortFunc(paths, func(a, b string) int {
		if newerToolkit(a, b) {
			return -1
		}
		return 1
	})
	want := []string{"/usr/local/cuda-13.0/bin/compute-sanitizer", "/usr/local/cuda-12.10/bin/compute-sanitizer", "/usr/local/cuda-12.9/bin/compute-sanitizer", "/usr/local/cuda-11.8/bin/compute-sanitizer"}
	if !slices.Equal(paths, want) {
		t.Errorf("order %v, want %v", paths, want)
	}
}

package main

import (
	"os"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/grade"
	"github.com/cudalessons/cudalessons/lessons"
)

// On the GPU the grader checks each exercise in a child process, the running program again: in
// tests, this test binary.
func TestMain(m *testing.M) {
	grade.ServeChild(lessons.All())
	os.Exit(m.Run())
}

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/nsight"
)

var kernelDecl = regexp.MustCompile(`__global__\s+void\s+(?:__\w+__\s*\([^)]*\)\s*)*(\w+)\s*\(`)

// Every target names a lesson and a step that exist, and a kernel filter that matches a kernel
// declared in that lesson's sources: a typo would profile nothing on the GPU.
func TestTargetsExist(t *testing.T) {
	seen := map[string]bool{}
	for _, tg := range nsight.Targets {
		l, ok := lessonByID(tg.Lesson)
		if !ok {
			t.Errorf("target %s/%s: no lesson", tg.Lesson, tg.Step)
			continue
		}
		seen[tg.Lesson] = true
		if err := l.Step(tg.Step); err != nil {
			t.Errorf("target %s/%s: %v", tg.Lesson, tg.Step, err)
		}
		re, err := regexp.Compile(tg.Kernel)
		if err != nil {
			t.Errorf("target %s/%s: kernel filter: %v", tg.Lesson, tg.Step, err)
			continue
		}
		files, _ := filepath.Glob(filepath.Join("..", "..", "kernels", l.Kernels, "*.cu"))
		match := false
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range kernelDecl.FindAllStringSubmatch(string(b), -1) {
				match = match || re.MatchString(m[1])
			}
		}
		if !match {
			t.Errorf("target %s/%s: no kernel of kernels/%s matches %s", tg.Lesson, tg.Step, l.Kernels, tg.Kernel)
		}
		if len(tg.Sections) == 0 || tg.Question == "" {
			t.Errorf("target %s/%s: no sections or no question", tg.Lesson, tg.Step)
		}
	}
	for _, id := range []string{"00_setup", "03_matmul", "04_reductions", "05_conv", "06_giou", "07_trilinear", "08_hopper"} {
		if !seen[id] {
			t.Errorf("no profile of %s", id)
		}
	}
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
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

var walkCall = regexp.MustCompile(`(\w+)\.Walk\(env, "([^"]+)"\)`)

// The steps -sass records are exactly those the lesson's notebook walks, each a step of the lesson.
func TestWalkedStepsAreTheNotebooks(t *testing.T) {
	nbs := map[string]string{"08_hopper": "08_hopper.ipynb"}
	for _, l := range lessons {
		if l.Walked == nil {
			continue
		}
		if l.Walk == nil {
			t.Errorf("%s: steps to record but no Walk", l.ID)
		}
		nb, ok := nbs[l.ID]
		if !ok {
			t.Errorf("%s: which notebook walks its steps?", l.ID)
			continue
		}
		b, err := os.ReadFile(filepath.Join("..", "..", "notebooks", nb))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Cells []struct {
				Type   string   `json:"cell_type"`
				Source []string `json:"source"`
			} `json:"cells"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", nb, err)
		}
		walked := map[string]bool{}
		for _, c := range doc.Cells {
			if c.Type != "code" {
				continue
			}
			for _, m := range walkCall.FindAllStringSubmatch(strings.Join(c.Source, ""), -1) {
				walked[m[2]] = true
			}
		}
		if len(walked) == 0 {
			t.Errorf("%s walks no step", nb)
		}
		listed := map[string]bool{}
		for _, s := range l.Walked() {
			listed[s] = true
			if err := l.Step(s); err != nil {
				t.Errorf("%s: recorded step %q: %v", l.ID, s, err)
			}
			if !walked[s] {
				t.Errorf("%s: step %q is recorded, but %s does not walk it", l.ID, s, nb)
			}
		}
		for s := range walked {
			if !listed[s] {
				t.Errorf("%s: %s walks %q, whose SASS -sass does not record", l.ID, nb, s)
			}
		}
	}
}

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
	for _, tg := range Targets {
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

func TestLargestLaunchAndMetricPick(t *testing.T) {
	ks := []nsight.Kernel{{ID: 0, Grid: "(1, 1, 1)", Block: "(256, 1, 1)"}, {ID: 1, Grid: "(128, 64, 1)", Block: "(256, 1, 1)"}, {ID: 2, Grid: "(4, 1, 1)", Block: "(256, 1, 1)"}}
	if k := largest(ks); k.ID != 1 {
		t.Errorf("largest launch %d, want 1", k.ID)
	}
	tg := Target{Metrics: []string{"dram__bytes_read.sum", "made_up__metric.sum"}, Like: []string{"dsmem"}}
	known := map[string]bool{"dram__bytes_read": true, "l1tex__m_dsmem_bytes": true, "l1tex__dsmem_requests": true}
	keep, dropped := pickMetrics(tg, known)
	if len(keep) != 2 || keep[0] != "dram__bytes_read.sum" || keep[1] != "l1tex__m_dsmem_bytes.sum" || len(dropped) != 1 {
		t.Errorf("kept %v, dropped %v", keep, dropped)
	}
	if keep, _ := pickMetrics(tg, nil); len(keep) != 2 {
		t.Errorf("without the list of known metrics every metric asked is kept: %v", keep)
	}
}

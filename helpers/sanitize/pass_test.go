package sanitize

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
)

// The two summary lines compute-sanitizer prints, and the test's verdict inside its output.
func TestJudge(t *testing.T) {
	launched := []gpu.Launch{{Source: "1.cu", Kernel: "k", Count: 3}, {Source: "2.cu", Kernel: "k", Count: 1}}
	cases := []struct {
		tool, log string
		exit      error
		timedOut  bool
		verdict   string
		errs, hz  int
	}{
		{"memcheck", "=== RUN TestSanitize\nPASS\n========= ERROR SUMMARY: 0 errors\n", nil, false, "ok", 0, 0},
		{"memcheck", "PASS\n========= ERROR SUMMARY: 2 errors\n", errors.New("exit status 1"), false, "2 errors", 2, 0},
		{"racecheck", "PASS\n========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n", nil, false, "ok", 0, 0},
		{"racecheck", "PASS\n========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n", errors.New("exit status 1"), false, "1 hazards", 0, 1},
		{"synccheck", "--- FAIL: TestSanitize\nFAIL\n========= ERROR SUMMARY: 0 errors\n", errors.New("exit status 1"), false, "the test did not pass (FAIL)", 0, 0},
		{"synccheck", "=== RUN TestSanitize\n", errors.New("signal: killed"), true, "stopped at its time limit", 0, 0},
		{"memcheck", "PASS\n", nil, false, "no sanitizer summary (did it attach?)", 0, 0},
	}
	for _, c := range cases {
		r := Run{Tool: c.tool, Launched: launched}
		r.Judge(c.log, c.exit, c.timedOut)
		if r.Verdict != c.verdict || r.Errors != c.errs || r.Hazards != c.hz {
			t.Errorf("%s on %q: verdict %q, %d errors, %d hazards; want %q, %d, %d", c.tool, c.log, r.Verdict, r.Errors, r.Hazards, c.verdict, c.errs, c.hz)
		}
		if r.Kernels != 2 || r.Launches != 4 {
			t.Errorf("%d kernels, %d launches, want 2 and 4", r.Kernels, r.Launches)
		}
	}
	r := Run{Tool: "memcheck"}
	r.Judge("PASS\n========= ERROR SUMMARY: 0 errors\n", nil, false)
	if r.OK() {
		t.Error("a run that launched nothing passed")
	}
}

var folder = compile.Files{Pkg: "kernels/toy", FS: fstest.MapFS{
	"1_step.cu":           {Data: []byte(`extern "C" __global__ void step(float *x) {}` + "\n" + `extern "C" __global__ void finish(float *x) {}`)},
	"2_step.cu":           {Data: []byte(`extern "C" __global__ void step(float *x) {}`)},
	"solutions/ex1_a.cu":  {Data: []byte(`extern "C" __global__ void ex1_a(float *x) {}`)},
	"kernels.go":          {Data: []byte("package toy")},
	"solutions/readme.md": {Data: []byte("extern \"C\" __global__ void not_cuda(void) {}")},
}}

func pass(launched []gpu.Launch) Pass {
	var p Pass
	for _, tool := range Tools {
		p.Runs = append(p.Runs, Run{Tool: tool, Package: "lessons/toy", Verdict: "ok", Launched: launched})
	}
	return p
}

// Every kernel of every file, the same name in two files counted apart, a solution launched under
// the exercise's name.
func TestCovers(t *testing.T) {
	all := []gpu.Launch{{Source: "1_step.cu", Kernel: "finish", Count: 1}, {Source: "1_step.cu", Kernel: "step", Count: 1}, {Source: "2_step.cu", Kernel: "step", Count: 2}, {Source: "my_ex1_a.cu", Kernel: "ex1_a", Count: 1}}
	if err := pass(all).Covers([]compile.Files{folder}); err != nil {
		t.Errorf("a full pass: %v", err)
	}
	err := pass(all[1:3]).Covers([]compile.Files{folder})
	if err == nil || !strings.Contains(err.Error(), "1_step.cu: finish") || !strings.Contains(err.Error(), "ex1_a") {
		t.Errorf("missing finish and ex1_a: %v", err)
	}
	sameNameOtherFile := []gpu.Launch{{Source: "1_step.cu", Kernel: "finish", Count: 1}, {Source: "1_step.cu", Kernel: "step", Count: 1}, {Source: "my_ex1_a.cu", Kernel: "ex1_a", Count: 1}}
	if err := pass(sameNameOtherFile).Covers([]compile.Files{folder}); err == nil || !strings.Contains(err.Error(), "2_step.cu: step") {
		t.Errorf("2_step.cu's step is its own kernel: %v", err)
	}
	p := pass(all)
	p.Runs = p.Runs[:2]
	p.Runs[1].Verdict = "3 hazards"
	err = p.Covers([]compile.Files{folder})
	if err == nil || !strings.Contains(err.Error(), "no synccheck run") || !strings.Contains(err.Error(), "3 hazards") {
		t.Errorf("a missing run and a failed one: %v", err)
	}
}

func TestChanged(t *testing.T) {
	now, err := SourcesOf([]compile.Files{folder})
	if err != nil {
		t.Fatal(err)
	}
	if len(now) != 3 || now["kernels/toy/1_step.cu"] == "" {
		t.Fatalf("SourcesOf = %v", now)
	}
	p := Pass{Sources: map[string]string{"kernels/toy/1_step.cu": now["kernels/toy/1_step.cu"], "kernels/toy/2_step.cu": "000000000000", "kernels/toy/3_old.cu": "x"}}
	got := strings.Join(p.Changed(now), ", ")
	want := "kernels/toy/2_step.cu (changed), kernels/toy/3_old.cu (gone), kernels/toy/solutions/ex1_a.cu (new)"
	if got != want {
		t.Errorf("Changed = %s, want %s", got, want)
	}
}

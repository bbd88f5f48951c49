package lab

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/record"
)

var stepFiles = compile.Files{Pkg: "kernels/test", FS: fstest.MapFS{
	"1_plain.cu": {Data: []byte("// Step 1.\nextern \"C\" __global__ void k1() {}\n")},
	"2_async.cu": {Data: []byte("// Step 2.\n// Needs: compute capability 8.0 (cp.async).\n// Needs: compute capability 9.0 with CLUSTER (thread block clusters).\nextern \"C\" __global__ void k2() {}\n")},
}}

func profileDevice(t *testing.T, key string) gpu.DeviceInfo {
	t.Helper()
	p, err := gpu.LookupProfile(key)
	if err != nil {
		t.Fatal(err)
	}
	return p.Device()
}

// A step is refused for the need its source declares (with the define that brings it in), or for
// its plan's gpu.ErrUnsupported; any other plan error is reported as the lesson's bug.
func TestCheckStep(t *testing.T) {
	t4, a100, h100 := profileDevice(t, "t4"), profileDevice(t, "a100-80"), profileDevice(t, "h100-sxm")
	if c := CheckStep(stepFiles, "1 plain", "1_plain.cu", nil, t4, nil); !c.Runs() || c.Need != "" {
		t.Errorf("a source with no need on a T4: %+v", c)
	}
	c := CheckStep(stepFiles, "2 async", "2_async.cu", nil, t4, nil)
	if c.Runs() || !strings.Contains(c.Refused, "needs compute capability 8.0 (cp.async); this GPU is 7.5") || c.Need != "8.0 (cp.async)" {
		t.Errorf("cp.async on a T4: %+v", c)
	}
	if c := CheckStep(stepFiles, "2 async", "2_async.cu", nil, a100, nil); !c.Runs() {
		t.Errorf("cp.async on an A100: %+v", c)
	}
	if c := CheckStep(stepFiles, "2 cluster", "2_async.cu", []string{"CLUSTER=4"}, a100, nil); c.Runs() || !strings.Contains(c.Refused, "9.0 (thread block clusters)") {
		t.Errorf("a cluster build on an A100: %+v", c)
	}
	if c := CheckStep(stepFiles, "2 cluster", "2_async.cu", []string{"CLUSTER=4"}, h100, nil); !c.Runs() {
		t.Errorf("a cluster build on an H100: %+v", c)
	}
	lim := func() error { return gpu.Unsupported("needs 100 KiB of shared memory, over the limit of 64 KiB") }
	if c := CheckStep(stepFiles, "1 plain", "1_plain.cu", nil, t4, lim); c.Runs() || !strings.Contains(c.Refused, "100 KiB") {
		t.Errorf("a plan's refusal: %+v", c)
	}
	bug := func() error { return fmt.Errorf("M = 7 is not a multiple of 8") }
	if c := CheckStep(stepFiles, "1 plain", "1_plain.cu", nil, t4, bug); c.Runs() || !strings.Contains(c.Refused, "a bug of the lesson") {
		t.Errorf("a plan that refuses the lesson's own shape: %+v", c)
	}
}

func TestRefusalsAndInstead(t *testing.T) {
	if !IsRefusal(gpu.NeedCC("s", profileDevice(t, "t4"), 80, "cp.async")) || !IsRefusal(fmt.Errorf("wrapped: %w", &compile.NeedError{Name: "a.cu", Arch: "compute_75"})) {
		t.Error("a need or a GPU limit is a refusal")
	}
	if IsRefusal(fmt.Errorf("wrong result")) || IsRefusal(nil) || gpu.NeedCC("s", profileDevice(t, "a100-80"), 80, "x") != nil {
		t.Error("other errors are not refusals, and an 8.0 GPU meets an 8.0 need")
	}
	checks := WithInstead([]StepCheck{{Step: "1"}, {Step: "2", Refused: "x"}, {Step: "3"}, {Step: "4", Refused: "y"}, {Step: "5", Refused: "z", Instead: "op"}})
	if checks[1].Instead != "1" || checks[3].Instead != "3" || checks[4].Instead != "op" {
		t.Errorf("instead: %+v", checks)
	}
	// A refusal reads as its need and the step that runs instead, as a note, a record and an error.
	if err := checks[0].Err(); err != nil || checks[0].Why() != "" {
		t.Errorf("a step that runs: %v %q", err, checks[0].Why())
	}
	err := checks[1].Err()
	if want := "x; 1 runs instead"; checks[1].Why() != want || !IsRefusal(err) || !strings.Contains(err.Error(), want) || RefusedRecord(checks[1]).Note != want {
		t.Errorf("a refusal: %q, %v, %q", checks[1].Why(), err, RefusedRecord(checks[1]).Note)
	}
	if got := (StepCheck{Step: "9", Refused: "w"}).Why(); got != "w" {
		t.Errorf("a refusal with nothing instead: %q", got)
	}
}

// A recorded run shown as a GPU that refuses a step would show it: no record of the step has a
// time, one refused record says why, baselines stay.
func TestWithoutRefused(t *testing.T) {
	run := &record.Run{Lesson: "x", Receipt: record.Receipt{Device: gpu.DeviceInfo{Name: "H"}}}
	run.Add(record.Record{Case: "fwd", Variant: "1", Kind: "kernel", MedianMS: 1})
	run.Add(record.Record{Case: "fwd", Variant: "2", Kind: "kernel", MedianMS: 0.5})
	run.Add(record.Record{Case: "sweep", Variant: "2", Kind: "kernel", MedianMS: 0.4, Size: 8})
	run.Add(record.Record{Case: "fwd", Variant: "PyTorch", Kind: "baseline", MedianMS: 2})
	out := WithoutRefused(run, map[string]StepCheck{"2": {Step: "2", File: "2_async.cu", Refused: "needs 8.0", Instead: "1"}})
	if len(run.Records) != 4 {
		t.Fatal("the recorded run itself changed")
	}
	for _, r := range out.Records {
		if r.Variant == "2" && (r.Kind != "refused" || r.MedianMS != 0) {
			t.Errorf("a refused step kept a time: %+v", r)
		}
	}
	ref := Refused(out)
	if len(ref) != 1 || ref[0].Note != "needs 8.0; 1 runs instead" || len(out.Select("fwd")) != 2 {
		t.Errorf("refused records %+v, fwd %+v", ref, out.Select("fwd"))
	}
	tab, ok := RefusedTable(out)
	if !ok || len(tab.Rows) != 1 || tab.Rows[0][0] != "2" {
		t.Errorf("refused table %+v", tab)
	}
	if _, ok := RefusedTable(run); ok {
		t.Error("a run with no refusal has no refused table")
	}
}

func TestStepsTable(t *testing.T) {
	l := Lesson{ID: "09_test", Steps: func(d gpu.DeviceInfo) []StepCheck {
		return []StepCheck{
			CheckStep(stepFiles, "1 plain", "1_plain.cu", nil, d, nil),
			CheckStep(stepFiles, "2 async", "2_async.cu", nil, d, nil),
		}
	}}
	tab := StepsTable([]Lesson{l}, profileDevice(t, "t4"))
	text := fmt.Sprint(tab.Rows)
	if len(tab.Rows) != 2 || !strings.Contains(text, "1 of 2 run") || !strings.Contains(text, "refused: 2 async") || !strings.Contains(text, "1 plain runs instead") {
		t.Errorf("T4 table: %v", tab.Rows)
	}
	if tab := StepsTable([]Lesson{l}, profileDevice(t, "h100-sxm")); len(tab.Rows) != 1 || !strings.Contains(fmt.Sprint(tab.Rows), "2 of 2 run") {
		t.Errorf("H100 table: %v", tab.Rows)
	}
}

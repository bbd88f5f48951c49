package nsight

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestLargestLaunchAndMetricPick(t *testing.T) {
	ks := []Kernel{{ID: 0, Grid: "(1, 1, 1)", Block: "(256, 1, 1)"}, {ID: 1, Grid: "(128, 64, 1)", Block: "(256, 1, 1)"}, {ID: 2, Grid: "(4, 1, 1)", Block: "(256, 1, 1)"}}
	if k := Largest(ks); k.ID != 1 {
		t.Errorf("largest launch %d, want 1", k.ID)
	}
	tg := Target{Metrics: []string{"dram__bytes_read.sum", "made_up__metric.sum"}, Like: []string{"dsmem"}}
	known := map[string]bool{"dram__bytes_read": true, "l1tex__m_dsmem_bytes": true, "l1tex__dsmem_requests": true}
	keep, dropped := PickMetrics(tg, known)
	if len(keep) != 2 || keep[0] != "dram__bytes_read.sum" || keep[1] != "l1tex__m_dsmem_bytes.sum" || len(dropped) != 1 {
		t.Errorf("kept %v, dropped %v", keep, dropped)
	}
	if keep, _ := PickMetrics(tg, nil); len(keep) != 2 {
		t.Errorf("without the list of known metrics every metric asked is kept: %v", keep)
	}
}

// A step with a target of its own gets it; another step of the lesson gets the lesson's sections
// and metrics with no question; a lesson with none gets the memory sections. The compiled kernels'
// names replace the filter, quoted.
func TestForStep(t *testing.T) {
	own := ForStep("00_setup", "float4", nil)
	if own.Kernel != "^add_float4$" || own.Question == "" || len(own.Metrics) == 0 {
		t.Errorf("float4's own target: %+v", own)
	}
	other := ForStep("03_matmul", "3 shared", []string{"mm_shared"})
	if other.Step != "3 shared" || other.Question != "" || other.Kernel != "^(mm_shared)$" || !contains(other.Sections, SourceCounters) || other.Launches < 3 {
		t.Errorf("another matmul step: %+v", other)
	}
	none := ForStep("99_none", "x", []string{"k.v2", "k2"})
	if none.Kernel != `^(k\.v2|k2)$` || !contains(none.Sections, MemoryWorkloadAnalysis) || !contains(none.Sections, WarpStateStats) {
		t.Errorf("a lesson without targets: %+v", none)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Collect keeps the largest launch, asks for the stall reasons, tries once more with the sections
// alone when the metrics make ncu fail (and says so), and gives up at once on restricted counters
// and on a run that took too long.
func TestCollect(t *testing.T) {
	b, err := os.ReadFile("testdata/details_constructed.csv")
	if err != nil {
		t.Fatal(err)
	}
	tool := Tool{Path: "/usr/local/cuda/bin/ncu", Version: "2025.3.1.0"}
	tg := Target{Lesson: "00_setup", Step: "float4", Kernel: "^add_float4$", Launches: 2, Sections: memory, Metrics: dram, Question: "q"}
	var calls []Options
	p, err := Collect(tg, nil, func(opts Options) (*Result, error) {
		calls = append(calls, opts)
		if len(opts.Metrics) > 0 {
			return nil, errors.New("==ERROR== Failed to find metric dram__bytes_read.sum")
		}
		return Parse(tool, nil, "rerun-child: the check passed\n"+string(b))
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[0].LaunchCount != 2 || !contains(calls[0].Metrics, StallMetrics) || !contains(calls[0].Metrics, "dram__bytes_read.sum") {
		t.Errorf("the runs asked %+v", calls)
	}
	if p.Step != "float4" || p.Question != "q" || p.Kernel.Name != "add_float4" || p.Kernel.ID != Largest(loadSample(t)).ID {
		t.Errorf("profile %+v", p)
	}
	if !strings.Contains(p.Note, "only the sections were collected") || !strings.Contains(p.Note, "Failed to find metric") {
		t.Errorf("note %q", p.Note)
	}
	for _, final := range []error{&CountersError{}, fmt.Errorf("too long: %w", context.DeadlineExceeded)} {
		n := 0
		_, err := Collect(tg, nil, func(Options) (*Result, error) { n++; return nil, final })
		if n != 1 || !errors.Is(err, final) && err != final {
			t.Errorf("%v: %d runs, error %v", final, n, err)
		}
	}
	if _, err := Parse(tool, nil, "==PROF== Disconnected\n"); err == nil || !strings.Contains(err.Error(), "no CSV") {
		t.Errorf("nothing profiled: %v", err)
	}
	if _, err := Parse(tool, nil, "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"); !errors.Is(err, ErrCountersRestricted) {
		t.Errorf("restricted counters: %v", err)
	}
}

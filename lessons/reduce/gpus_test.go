package reduce

import (
	"slices"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"github.com/cudalessons/cudalessons/helpers/record"
	kr "github.com/cudalessons/cudalessons/kernels/reduce"
)

// The cluster steps need 9.0 (every GPU before the H100 refuses them, the online step running
// instead of step 5 and the split-row step instead of step 8); the grid ring (step 11) needs 8.0
// (the T4 runs the split-row step instead); the grid-resident step needs 8.0 and, at the article's 4M-float samples, the shared
// memory of enough SMs: the A100's 108 x 163 KiB hold one, the 8.6 and 8.9 GPUs' 99 KiB SMs do not.
func TestStepsOnProfiles(t *testing.T) {
	cluster, anyLen, stream, ring, grid := SoftmaxSteps[4].Name, SoftmaxSteps[7].Name, SoftmaxSteps[8].Name, SoftmaxSteps[10].Name, LNSteps[5].Name
	want := map[string][]string{
		"t4": {cluster, anyLen, stream, ring, grid}, "a100-80": {cluster, anyLen, stream}, "a10": {cluster, anyLen, stream, grid}, "rtx3090": {cluster, anyLen, stream, grid},
		"l4": {cluster, anyLen, stream, grid}, "rtx4090": {cluster, anyLen, stream, grid}, "h100-sxm": nil,
	}
	why := map[string]string{"t4": "compute capability 8.0", "a10": "SMs", "rtx3090": "SMs", "l4": "SMs", "rtx4090": "SMs"}
	for _, key := range labtest.Profiles {
		checks := Lesson.StepsOn(labtest.ProfileDevice(t, key))
		if len(checks) != len(SoftmaxSteps)+len(LNSteps) {
			t.Fatalf("%s: %d checks", key, len(checks))
		}
		var got []string
		for _, c := range checks {
			if c.Runs() {
				continue
			}
			got = append(got, c.Step)
			if strings.Contains(c.Refused, "a bug of the lesson") {
				t.Errorf("%s: %s: %s", key, c.Step, c.Refused)
			}
			switch c.Step {
			case cluster:
				if !strings.Contains(c.Refused, "compute capability 9.0") || c.Instead != SoftmaxSteps[3].Name {
					t.Errorf("%s: %s refused as %q, instead %q", key, c.Step, c.Refused, c.Instead)
				}
			case anyLen, stream:
				if !strings.Contains(c.Refused, "compute capability 9.0") || c.Instead != SoftmaxSteps[9].Name {
					t.Errorf("%s: %s refused as %q, instead %q", key, c.Step, c.Refused, c.Instead)
				}
			case ring:
				if !strings.Contains(c.Refused, "compute capability 8.0") || c.Instead != SoftmaxSteps[9].Name {
					t.Errorf("%s: %s refused as %q, instead %q", key, c.Step, c.Refused, c.Instead)
				}
			case grid:
				if !strings.Contains(c.Refused, why[key]) || c.Instead != LNSteps[3].Name {
					t.Errorf("%s: %s refused as %q, instead %q", key, c.Step, c.Refused, c.Instead)
				}
			}
		}
		if !slices.Equal(got, want[key]) {
			t.Errorf("%s refuses %v, want %v", key, got, want[key])
		}
	}
}

// Step 5 (row on chip) runs everywhere at a stability shape its shared memory takes: a T4's 63
// usable KiB miss 16384 floats, so there it is measured at 8192.
func TestRowOnChipFollowsSharedMemory(t *testing.T) {
	t4, h100 := labtest.ProfileDevice(t, "t4"), labtest.ProfileDevice(t, "h100-sxm")
	if got := LNShortStableOn(t4); got != [2]int{512, 8192} {
		t.Errorf("T4 stability shape %v", got)
	}
	if got := LNShortStableOn(h100); got != LNShortStable {
		t.Errorf("H100 stability shape %v", got)
	}
	_, err := PlanLayerNorm(t4, LNSteps[4], 256, 16384, true)
	if !lab.IsRefusal(err) || !IsRefusal(err) || !strings.Contains(err.Error(), "64 KiB") {
		t.Errorf("T4, M = 16384: %v", err)
	}
	if _, err := PlanLayerNorm(h100, LNSteps[4], 256, 16384, true); err != nil {
		t.Error(err)
	}
}

// The op's dispatch (ForwardStep) picks only steps the GPU runs: never the grid-resident step on a
// T4 (it needs 8.0), even where its plan's sizes would take the sample.
func TestForwardStepOnProfiles(t *testing.T) {
	for _, key := range labtest.Profiles {
		d := labtest.ProfileDevice(t, key)
		refused := Lesson.RefusedOn(d)
		for _, m := range []int{7, 1024, 4096, 16384, 65536, 1 << 18, 1 << 20, LNSize} {
			st := ForwardStep(d, 16, m, true)
			if _, err := PlanLayerNorm(d, st, 16, m, true); err != nil {
				t.Errorf("%s, M = %d: the op picks %s, whose plan refuses: %v", key, m, st.Name, err)
			}
			if _, ok := refused[st.Name]; ok && m == LNSize {
				t.Errorf("%s: the op picks the refused %s at the article's shape", key, st.Name)
			}
		}
	}
	t4 := labtest.ProfileDevice(t, "t4")
	if st := ForwardStep(t4, 16, 1<<18, true); st.Name != LNSteps[3].Name {
		t.Errorf("T4, M = 2^18: %s", st.Name)
	}
}

// The declared needs are true: each source builds at its need and is refused one step below; every
// other source (the 16-bit softmax included) builds for sm_75.
func TestDeclaredNeeds(t *testing.T) {
	needs := map[string]struct {
		cc        int
		at, below string
		defines   []string
	}{
		"s5_cluster.cu":         {90, "sm_90", "sm_89", []string{"CLUSTER=2", "VECS=8"}},
		"s8_cluster_any.cu":     {90, "sm_90", "sm_89", []string{"CLUSTER=16", "VECS=8", "SVECS=4"}},
		"s8b_cluster_stream.cu": {90, "sm_90", "sm_89", []string{"CLUSTER=8"}},
		"s11_grid_ring.cu":      {80, "sm_80", "sm_75", nil},
		"l6_grid_resident.cu":   {80, "sm_80", "sm_75", nil},
	}
	for _, f := range kr.Files() {
		src, err := kr.Source(f)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := needs[f]
		if !ok {
			if r := compile.Required(src.Code, nil); r.CC != 0 {
				t.Errorf("%s declares %v", f, r)
			}
			if log, err := compile.Assemble(src, compile.Options{Arch: "sm_75"}); err != nil {
				t.Errorf("%s for sm_75: %v\n%s", f, err, log)
			}
			continue
		}
		if r := compile.Required(src.Code, n.defines); r.CC != n.cc {
			t.Errorf("%s declares %v", f, r)
		}
		if log, err := compile.Assemble(src, compile.Options{Arch: n.at, Defines: n.defines}); err != nil {
			t.Errorf("%s for %s: %v\n%s", f, n.at, err, log)
		}
		if _, err := compile.Assemble(src, compile.Options{Arch: n.below, Defines: n.defines}); err == nil {
			t.Errorf("%s built for %s", f, n.below)
		} else if _, ok := compile.IsNeed(err); !ok {
			t.Errorf("%s for %s: %v (want a NeedError)", f, n.below, err)
		}
	}
}

// Every table and figure works on the recorded run as each profile would have measured it, and a
// refused step's target says so.
func TestTablesWithoutRefused(t *testing.T) {
	labtest.OnProfiles(t, Lesson, func(key string, run *record.Run, refused map[string]lab.StepCheck) {
		for _, sec := range Sections {
			if _, err := SectionFigures(run, sec); err != nil {
				t.Errorf("%s, %s: %v", key, sec, err)
			}
		}
		tt := TargetsTable(run)
		for _, row := range tt.Rows {
			if strings.Contains(row[0], LNSteps[5].Name) {
				_, gone := refused[LNSteps[5].Name]
				if gone != strings.Contains(row[2], "refused on this GPU") {
					t.Errorf("%s: %v", key, row)
				}
			}
		}
	})
}

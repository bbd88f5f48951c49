package conv

import (
	"slices"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"github.com/cudalessons/cudalessons/helpers/record"
	kc "github.com/cudalessons/cudalessons/kernels/conv"
	"github.com/cudalessons/cudalessons/results"
)

// The T4 (7.5) refuses the tensor-core steps 4 to 7 by their sources' declared need (8.0), with
// step 3 running instead; every later GPU runs every step at AlexNet's layer.
func TestStepsOnProfiles(t *testing.T) {
	want := []string{"4 tensor cores TF32", "4 tensor cores FP16", "5 cp.async TF32, 2 buffers", "5 cp.async TF32", "5 cp.async FP16", "6 fused atomicMax", "7 fused tile pool"}
	for _, key := range labtest.Profiles {
		d := labtest.ProfileDevice(t, key)
		checks := Lesson.StepsOn(d)
		if len(checks) != len(Steps) {
			t.Fatalf("%s: %d checks for %d steps", key, len(checks), len(Steps))
		}
		var got []string
		for _, c := range checks {
			if !c.Runs() {
				got = append(got, c.Step)
				if !strings.Contains(c.Refused, "compute capability 8.0") || c.Instead == "" {
					t.Errorf("%s: %s refused as %q, instead %q", key, c.Step, c.Refused, c.Instead)
				}
			}
		}
		if key == "t4" {
			if !slices.Equal(got, want) {
				t.Errorf("t4 refuses %v, want %v", got, want)
			}
			if c := Lesson.RefusedOn(d)["7 fused tile pool"]; c.Instead != Eager {
				t.Errorf("t4: the fused step's stand-in is %q, want %q", c.Instead, Eager)
			}
		} else if len(got) > 0 {
			t.Errorf("%s refuses %v", key, got)
		}
	}
}

// On compute capability 8.6 and 8.9 (99 KiB per block) the three-stage steps do not fit the deep
// layer's 2304-tap table: their plan refuses it as a GPU limit (a refusal, not a plain error).
func TestDeepLayerSharedMemory(t *testing.T) {
	for _, key := range []string{"a10", "l4"} {
		d := labtest.ProfileDevice(t, key)
		_, err := MustStep("5 cp.async TF32").PlanFor(Deep, d)
		if !lab.IsRefusal(err) || !strings.Contains(err.Error(), "shared memory") {
			t.Errorf("%s: %v", key, err)
		}
		if _, err := MustStep("5 cp.async TF32, 2 buffers").PlanFor(Deep, d); err != nil {
			t.Errorf("%s: two buffers should fit: %v", key, err)
		}
	}
	if _, err := MustStep("5 cp.async TF32").PlanFor(Deep, labtest.ProfileDevice(t, "a100-80")); err != nil {
		t.Error(err)
	}
	rec, err := record.LoadFS(results.FS, ID)
	if err != nil {
		t.Skip(err)
	}
	d := labtest.ProfileDevice(t, "a10")
	run := AtShapesOn(lab.WithoutRefused(rec, Lesson.RefusedOn(d)), d)
	if r, ok := run.Find(CaseDeep, "5 cp.async TF32", 0); !ok || r.Kind != "refused" || r.MedianMS > 0 {
		t.Errorf("a10, deep layer: %+v", r)
	}
	if r, ok := run.Find(CaseAlexNet, "5 cp.async TF32", 0); !ok || r.MedianMS <= 0 {
		t.Errorf("a10, AlexNet's layer: %+v", r)
	}
	if _, err := Figures(run); err != nil {
		t.Error(err)
	}
	for _, row := range ConvTable(run, CaseDeep).Rows {
		if row[0] == "5 cp.async TF32" && row[2] != "refused on this GPU" {
			t.Errorf("a10, deep layer row %v", row)
		}
	}
}

// Each declared need is true: the source builds for that architecture and is refused one below.
func TestDeclaredNeeds(t *testing.T) {
	for _, f := range []string{"4_tensor_core.cu", "5_cp_async.cu", "6_fused_atomic.cu", "7_fused_tile.cu"} {
		src, err := kc.Source(f)
		if err != nil {
			t.Fatal(err)
		}
		if n := compile.Required(src.Code, nil); n.CC != 80 {
			t.Errorf("%s declares %v", f, n)
		}
		if log, err := compile.Assemble(src, compile.Options{Arch: "sm_80"}); err != nil {
			t.Errorf("%s for sm_80: %v\n%s", f, err, log)
		}
		if _, err := compile.Assemble(src, compile.Options{Arch: "sm_75"}); err == nil {
			t.Errorf("%s built for sm_75", f)
		} else if _, ok := compile.IsNeed(err); !ok {
			t.Errorf("%s for sm_75: %v (want a NeedError)", f, err)
		}
	}
	for _, f := range []string{"1_direct.cu", "2_shared.cu", "3_igemm.cu", "solutions/ex1_direct.cu", "solutions/ex2_pool_any_sign.cu"} {
		src, err := kc.Source(f)
		if err != nil {
			t.Fatal(err)
		}
		if log, err := compile.Assemble(src, compile.Options{Arch: "sm_75"}); err != nil {
			t.Errorf("%s for sm_75: %v\n%s", f, err, log)
		}
	}
}

// Every table and figure works on the recorded run as each profile would have measured it.
func TestTablesWithoutRefused(t *testing.T) {
	labtest.OnProfiles(t, Lesson, func(key string, run *record.Run, refused map[string]lab.StepCheck) {
		targets := Targets(run)
		for _, row := range targets.Rows {
			if len(refused) > 0 && strings.Contains(row[0], "tensor-core") && !strings.Contains(row[1], "refused on this GPU") {
				t.Errorf("%s: %v", key, row)
			}
		}
		if len(refused) > 0 {
			if tb, ok := lab.RefusedTable(run); !ok || len(tb.Rows) != len(refused) {
				t.Errorf("%s: refused table %v", key, tb.Rows)
			}
		}
		_ = Closing(run)
	})
}

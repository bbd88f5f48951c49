package matmul

import (
	"errors"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"github.com/cudalessons/cudalessons/helpers/record"
	km "github.com/cudalessons/cudalessons/kernels/matmul"
)

// A T4 refuses exactly the cp.async / mma.sync steps, naming the need and the step that runs
// instead; no other profile refuses anything (8.6 and 8.9 run the tensor-core steps with 2 stages,
// and step 7, whose 3 stages take 96 KiB, with 3).
func TestStepsOnProfiles(t *testing.T) {
	want := map[string]bool{"7 warp tile": true, "8 tensor core tf32": true, "8b 3xTF32 split": true, "9 fp16x3 split": true,
		"8b 3xTF32, one accumulator": true, "9 fp16x3, one accumulator": true, "9 bf16x3 split": true, HiOnly.Name: true}
	ref := Lesson.RefusedOn(labtest.ProfileDevice(t, "t4"))
	if len(ref) != len(want) {
		t.Errorf("T4 refuses %d steps, want %d: %v", len(ref), len(want), ref)
	}
	for name := range want {
		c, ok := ref[name]
		if !ok {
			t.Errorf("T4 does not refuse %s", name)
			continue
		}
		if !strings.Contains(c.Refused, "compute capability 8.0") || c.Instead != "6 vectorized" {
			t.Errorf("T4 refusal of %s: %+v", name, c)
		}
	}
	if len(Lesson.StepsOn(labtest.ProfileDevice(t, "t4"))) != len(Steps)+len(Variants) {
		t.Errorf("Steps does not check every step and variant")
	}
	for _, key := range labtest.Profiles[1:] {
		if ref := Lesson.RefusedOn(labtest.ProfileDevice(t, key)); len(ref) != 0 {
			t.Errorf("%s refuses %v", key, ref)
		}
	}
	// The depth each GPU runs the pipelined steps with.
	for key, stages := range map[string]int{"a100-80": 3, "h100-sxm": 3, "a10": 2, "rtx3090": 2, "l4": 2, "rtx4090": 2} {
		d := labtest.ProfileDevice(t, key)
		for _, st := range append(append([]Step{}, Steps[6:]...), Variants[1:]...) {
			stages := stages
			if st.Name == Steps[6].Name && d.MaxSharedPerBlockOptin >= 3*WarpTileStage {
				stages = 3
			}
			if n := st.StagesOn(d); n != stages {
				t.Errorf("%s on %s: %d stages, want %d", st.Name, key, n, stages)
			}
			cfg, err := st.Plan(Article, d)
			if err != nil || cfg.SharedBytes != stages*st.StageBytes || cfg.SharedBytes > d.MaxSharedPerBlockOptin {
				t.Errorf("%s on %s: %+v, %v", st.Name, key, cfg, err)
			}
			defs := strings.Join(st.DefinesOn(d), " ")
			if strings.Contains(defs, "STAGES=2") != (stages == 2) {
				t.Errorf("%s on %s: defines %s", st.Name, key, defs)
			}
		}
	}
	// A GPU whose blocks cannot hold even 2 stages is refused with the limit named.
	d := labtest.ProfileDevice(t, "a10")
	d.MaxSharedPerBlockOptin = 64 << 10
	if _, err := Steps[7].Plan(Article, d); !errors.Is(err, gpu.ErrUnsupported) || !strings.Contains(err.Error(), "shared memory") {
		t.Errorf("8 with 64 KiB a block: %v", err)
	}
	if err := Refusal(Steps[7], labtest.ProfileDevice(t, "t4")); !lab.IsRefusal(err) || !strings.Contains(err.Error(), "6 vectorized runs instead") {
		t.Errorf("Refusal: %v", err)
	}
}

// The declared needs are true: each source builds for sm_80 (with 2 stages too) and is refused,
// before NVRTC runs, for sm_75.
func TestNeedsAreDeclared(t *testing.T) {
	if _, err := compile.Version(); err != nil {
		t.Skip("no NVRTC:", err)
	}
	for _, st := range append(append([]Step{}, Steps...), Variants...) {
		src, err := km.Source(st.File)
		if err != nil {
			t.Fatal(err)
		}
		need := compile.Required(src.Code, st.Defines)
		for _, defs := range [][]string{st.Defines, st.DefinesOn(labtest.ProfileDevice(t, "l4"))} {
			arch := "sm_75"
			if need.CC > 0 {
				arch = "sm_" + strings.ReplaceAll(compile.CapabilityName(need.CC), ".", "")
			}
			if log, err := compile.Assemble(src, compile.Options{Arch: arch, Defines: defs}); err != nil {
				t.Errorf("%s %v for %s: %v\n%s", st.File, defs, arch, err, log)
			}
		}
		if need.CC > 75 {
			if _, err := compile.Assemble(src, compile.Options{Arch: "sm_75", Defines: st.Defines}); err == nil {
				t.Errorf("%s: built for sm_75", st.File)
			} else if _, ok := compile.IsNeed(err); !ok {
				t.Errorf("%s for sm_75: not a NeedError: %v", st.File, err)
			}
		}
	}
}

// Every table and figure works on the recorded run as each profile would have measured it.
func TestTablesAndFiguresOnEveryProfile(t *testing.T) {
	labtest.OnProfiles(t, Lesson, func(key string, run *record.Run, refused map[string]lab.StepCheck) {
		if key != "t4" {
			return
		}
		for _, tb := range Tables(run) {
			for _, row := range tb.Rows {
				line := strings.Join(row, " | ")
				for name := range refused {
					if strings.Contains(line, "not met") && strings.Contains(line, name) {
						t.Errorf("%s: %s: a refused step is 'not met': %s", key, tb.Title, line)
					}
				}
			}
		}
		tg := Targets(run)
		if got := tg.Rows[3][2]; got != "not measured: refused on this GPU" {
			t.Errorf("T4 TF32 target: %v", tg.Rows[3])
		}
		for _, k := range shownReports(run) {
			if k.Kernel == "mm_tf32" || k.Kernel == "mm_split" || k.Kernel == "mm_warptile" {
				t.Errorf("T4 shows the compile report of refused %s", k.Kernel)
			}
		}
	})
}

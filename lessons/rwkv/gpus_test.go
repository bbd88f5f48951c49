package rwkv

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"github.com/cudalessons/cudalessons/helpers/record"
	kr "github.com/cudalessons/cudalessons/kernels/rwkv"
)

// What each GPU refuses at the article's shape (T = 768), and why: the tensor-core steps need 8.0;
// v5 (104 KiB), v6 and v7 (122 KiB) and v8 (99.9 KiB) need more shared memory a block than 7.5
// (64 KiB) and 8.6/8.9 (99 KiB) give, and the backward's v4 (98.1 KiB) more than 7.5 gives. The
// A100 and the H100 run everything.
func TestStepsOnProfiles(t *testing.T) {
	tiles := []string{V5Step(8).Name, V5Step(32).Name}
	shared := append([]string{"v5 register tile"}, tiles...)
	tc := []string{"v6 tensor core tf32", "v7 tensor core 3xtf32", "v8 tensor core mma"}
	want := map[string]map[string]string{ // step: the words its refusal names
		"t4": {}, "a10": {}, "rtx3090": {}, "l4": {}, "rtx4090": {},
	}
	for _, k := range []string{"t4", "a10", "rtx3090", "l4", "rtx4090"} {
		for _, n := range shared {
			want[k][n] = "shared memory"
		}
		for _, n := range tc {
			want[k][n] = "shared memory"
			if k == "t4" {
				want[k][n] = "compute capability 8.0"
			}
		}
	}
	want["t4"]["bwd v4 register tile"] = "shared memory" // 98.1 KiB at T = 768: over 7.5's 64 KiB, under 8.6's 99
	for _, key := range labtest.Profiles {
		d := labtest.ProfileDevice(t, key)
		ref := Lesson.RefusedOn(d)
		w := want[key]
		if len(ref) != len(w) {
			t.Errorf("%s refuses %d steps, want %d: %v", key, len(ref), len(w), ref)
		}
		for name, words := range w {
			c, ok := ref[name]
			if !ok {
				t.Errorf("%s does not refuse %s", key, name)
				continue
			}
			instead := "v4 balanced"
			if strings.HasPrefix(name, "bwd") {
				instead = "bwd v3 batch group"
			}
			if !strings.Contains(c.Refused, words) || c.Instead != instead {
				t.Errorf("%s: refusal of %s: %+v", key, name, c)
			}
		}
	}
	all := Lesson.StepsOn(labtest.ProfileDevice(t, "h100-sxm"))
	if len(all) != len(Steps)+len(V5Tiles)-1+len(BackwardSteps) {
		t.Errorf("Steps checks %d steps", len(all))
	}
	if err := Refusal("v8 tensor core mma", labtest.ProfileDevice(t, "t4")); !lab.IsRefusal(err) || !strings.Contains(err.Error(), "v4 balanced runs instead") {
		t.Errorf("Refusal: %v", err)
	}
	// The op's dispatch on a T4 never picks a refused step, and does not fail.
	dp, err := DispatchFor(TF32)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"t4", "l4"} {
		c, err := dp.Choose(ArticleShape, labtest.ProfileDevice(t, key))
		if err != nil {
			t.Fatal(err)
		}
		if _, no := Lesson.RefusedOn(labtest.ProfileDevice(t, key))[c.Fwd.Name]; no {
			t.Errorf("%s: the op picks refused %s", key, c.Fwd.Name)
		}
	}
}

// The declared needs are true: each tensor-core source builds for sm_80 and is refused, before
// NVRTC runs, for sm_75; every other source builds for sm_75.
func TestNeedsAreDeclared(t *testing.T) {
	if _, err := compile.Version(); err != nil {
		t.Skip("no NVRTC:", err)
	}
	for _, file := range kr.Kernels.List() {
		src, err := kr.Source(file)
		if err != nil {
			t.Fatal(err)
		}
		var defs []string
		if strings.HasPrefix(file, "5_") {
			defs = []string{"TT=16"}
		}
		need := compile.Required(src.Code, defs)
		arch := "sm_75"
		if need.CC > 0 {
			arch = "sm_" + strings.ReplaceAll(compile.CapabilityName(need.CC), ".", "")
		}
		if log, err := compile.Assemble(src, compile.Options{Arch: arch, Defines: defs}); err != nil {
			t.Errorf("%s for %s: %v\n%s", file, arch, err, log)
		}
		if need.CC > 75 {
			if _, err := compile.Assemble(src, compile.Options{Arch: "sm_75", Defines: defs}); err == nil {
				t.Errorf("%s: built for sm_75", file)
			} else if _, ok := compile.IsNeed(err); !ok {
				t.Errorf("%s for sm_75: not a NeedError: %v", file, err)
			}
		}
	}
	for _, f := range []string{"6_tensorcore_tf32.cu", "7_tensorcore_3xtf32.cu", "8_tensorcore_mma.cu"} {
		src, _ := kr.Source(f)
		if compile.Required(src.Code, nil).CC != 80 {
			t.Errorf("%s declares no need of 8.0", f)
		}
	}
}

// Every table and figure works on the recorded run as each profile would have measured it.
func TestTablesAndFiguresOnEveryProfile(t *testing.T) {
	labtest.OnProfiles(t, Lesson, func(key string, run *record.Run, refused map[string]lab.StepCheck) {
		tg := Targets(run)
		for _, row := range tg.Rows {
			if strings.HasPrefix(row[0], "tensor-core forward") && len(refused) > 0 && row[2] != "not measured: refused on this GPU" {
				t.Errorf("%s: %v", key, row)
			}
		}
		for _, k := range shownReports(run) {
			for _, st := range Steps {
				if _, no := refused[st.Name]; no && k.Kernel == st.Kernel {
					t.Errorf("%s shows the compile report of refused %s", key, k.Kernel)
				}
			}
		}
	})
}

//go:build nocuda

package lab

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/nsight"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// A lesson without recorded profiles says how to record them; one with them shows them.
func TestShowProfileWithoutARecording(t *testing.T) {
	env, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if err := env.ShowProfile("99_none"); err == nil || !strings.Contains(err.Error(), "make profile") {
		t.Errorf("no recorded profile: %v", err)
	}
}

// addTrial is a one-kernel trial of a made-up lesson: the original copies a to c.
func addTrial(env *Env, lesson string) Trial {
	return Trial{Step: "naive", Lesson: lesson, Compile: func(code string) ([]record.KernelReport, error) {
		if code == "" {
			code = `extern "C" __global__ void add(const float* a, float* c, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i]; }`
		}
		p, err := env.Build(compile.Source{Name: "0_naive.cu", Code: code}, "add")
		if err != nil {
			return nil, err
		}
		return []record.KernelReport{p.Report("add", 256, 0)}, nil
	}}
}

func captureShow(t *testing.T) *bytes.Buffer {
	var out bytes.Buffer
	old := show.Out
	show.Out = &out
	t.Cleanup(func() { show.Out = old })
	return &out
}

// Without a GPU, Profile compiles the reader's code and says what profiling needs; a compile error
// is returned, as Try returns it.
func TestProfileWithoutAGPU(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	env, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	out := captureShow(t)
	mine := `extern "C" __global__ void add(const float* a, float* c, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = 2 * a[i]; }`
	if err := env.Profile(addTrial(env, "99_none"), mine); err != nil {
		t.Fatalf("Profile without a GPU: %v", err)
	}
	for _, want := range []string{"Your naive compiled", "Profiling it needs a GPU", "Nsight Compute"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the cell does not say %q:\n%s", want, out)
		}
	}
	_, err = env.ProfileTrial(addTrial(env, "99_none"), "")
	var ne *needsError
	if !errors.As(err, &ne) || !strings.Contains(err.Error(), "The original naive compiled") {
		t.Errorf("ProfileTrial of the original without a GPU: %v", err)
	}
	var ce *compile.Error
	if err := env.Profile(addTrial(env, "99_none"), "extern \"C\" __global__ void add(const float* a, float* c, int n) { c[0] = a[0] }"); !errors.As(err, &ce) {
		t.Errorf("a kernel that does not compile: %v, want a *compile.Error", err)
	}
}

// The no-GPU mode shows the recorded profile of the trial's own step, and only that step's.
func TestShowRecordedProfileOfTheStep(t *testing.T) {
	k := func(name string, dram float64) nsight.Kernel {
		return nsight.Kernel{Name: name, Grid: "(4096, 1, 1)", Block: "(256, 1, 1)", Metrics: []nsight.Metric{
			{Section: "GPU Speed Of Light Throughput", Name: "DRAM Throughput", Unit: "%", Value: dram, OK: true},
			{Section: nsight.CommandLineSection, Name: "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", Value: 3, OK: true}}}
	}
	f := nsight.File{Lesson: "99_made_up", Receipt: nsight.Receipt{GPU: "NVIDIA H200", Driver: "580", NCU: "Nsight Compute 2025.3.1.0", Date: "2026-11-27T10:00:00Z"},
		Profiles: []nsight.Profile{{Step: "naive", Kernel: k("add_naive", 71.5)}, {Step: "float4", Kernel: k("add_float4", 88.25)}}}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{"profiles/99_made_up.json": {Data: b}}
	out := captureShow(t)
	showRecordedProfile(fsys, Trial{Step: "naive", Lesson: "99_made_up"})
	text := out.String()
	for _, want := range []string{"recorded profile of the original naive", "add_naive", "71.5%", "NVIDIA H200"} {
		if !strings.Contains(text, want) {
			t.Errorf("the recorded profile lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "add_float4") {
		t.Errorf("another step's profile is shown:\n%s", text)
	}
	out.Reset()
	showRecordedProfile(fsys, Trial{Step: "grid-stride", Lesson: "99_made_up"})
	showRecordedProfile(fsys, Trial{Step: "naive", Lesson: "99_none"})
	if out.Len() != 0 {
		t.Errorf("a step without a recorded profile shows: %s", out)
	}
}

// With KERNELS_PROFILE_RECORDED=1 (the GPU matrix), a Profile cell runs nothing under Nsight
// Compute: it says so and shows the recorded profile of the step, when there is one.
func TestProfileRecordedOnly(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	t.Setenv(ProfileRecordedEnv, "1")
	env, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	out := captureShow(t)
	tr := addTrial(env, "00_setup")
	tr.Step = "float4"
	if err := env.Profile(tr, ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Profiling is off in this run", "The recorded profile of the original float4:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the cell does not say %q:\n%.1500s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "compiled. Profiling it needs a GPU") {
		t.Errorf("the cell compiled and looked for a GPU:\n%.1500s", out.String())
	}
}

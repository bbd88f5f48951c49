// Package labtest holds what the lessons' tests share: opening the lab for GPU tests (the default
// build's tests need a GPU and fail plainly without one; use -tags nocuda on a machine without a
// GPU), and checks of the lessons' notebook readings against the recorded figures.
package labtest

import (
	"os"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/sanitize"
	"github.com/cudalessons/cudalessons/results"
)

// Open opens the lab with the quick method and closes it when the test ends, after appending the
// kernels it launched to $KERNELS_LAUNCH_RECORD when that is set (the sanitizer pass's record).
func Open(t testing.TB) *lab.Env {
	t.Helper()
	env, err := lab.OpenWith(lab.Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	if !env.GPU() {
		t.Fatalf("the default build's tests need a GPU (use -tags nocuda without one): %v", env.Why)
	}
	t.Cleanup(func() {
		if err := env.Session.WriteLaunches(os.Getenv(gpu.LaunchRecordEnv)); err != nil {
			t.Error(err)
		}
		env.Close()
	})
	return env
}

// UnderSanitizer reports whether compute-sanitizer watches the test (cmd/sanitize sets
// KERNELS_SANITIZER): its memcheck counts every failed CUDA call as an error, so a check that makes
// one fail on purpose (to see the clear error) belongs to the plain test run only.
func UnderSanitizer() bool { return os.Getenv(gpu.SanitizerEnv) != "" }

// InPlan fails t for every record of a lesson's run outside the lesson's plan for this GPU: the
// (case, shape) points that Plan says a run (quick, or not) measures are what it measured.
func InPlan(t testing.TB, env *lab.Env, l lab.Lesson, run *record.Run, quick bool) {
	t.Helper()
	if l.Plan == nil {
		t.Errorf("%s has no Plan", l.ID)
		return
	}
	for _, p := range lab.OutsidePlan(run, l.Plan(quick, env.Session.Device)) {
		t.Errorf("%s: a record at %s, outside the lesson's plan", l.ID, p)
	}
}

// Profiles are the GPU profiles the lessons' no-GPU tests check their steps, tables and figures
// on: one GPU of each limit that refuses something (7.5; 8.0; 8.6 and 8.9 with 99 KiB a block),
// and the H100 that refuses nothing.
var Profiles = []string{"t4", "a100-80", "a10", "rtx3090", "l4", "rtx4090", "h100-sxm"}

// ProfileDevice is the DeviceInfo a plan sees on the profile with key (gpu.LookupProfile).
func ProfileDevice(t testing.TB, key string) gpu.DeviceInfo {
	t.Helper()
	p, err := gpu.LookupProfile(key)
	if err != nil {
		t.Fatal(err)
	}
	return p.Device()
}

// RefusedAsChecked fails t unless run, measured on env's GPU, skipped exactly the steps the
// lesson's checks refuse there: one refused record each, none of another step, and no time for a
// refused step in any case.
func RefusedAsChecked(t testing.TB, env *lab.Env, l lab.Lesson, run *record.Run) {
	t.Helper()
	want := l.RefusedOn(env.Device())
	got := map[string]bool{}
	for _, r := range lab.Refused(run) {
		if got[r.Variant] {
			t.Errorf("%s: two refused records of %s", l.ID, r.Variant)
		}
		got[r.Variant] = true
		if _, ok := want[r.Variant]; !ok {
			t.Errorf("%s: a refused record of %s, which %s runs", l.ID, r.Variant, env.Device().Name)
		}
	}
	for name := range want {
		if !got[name] {
			t.Errorf("%s: no refused record of %s", l.ID, name)
		}
	}
	for _, r := range run.Records {
		if _, ok := want[r.Variant]; ok && r.Kind != "refused" && r.MedianMS > 0 {
			t.Errorf("%s: %s %s is refused on %s but has a time", l.ID, r.Case, r.Variant, env.Device().Name)
		}
	}
}

// RunEmulated runs the lesson's quick run under the GPU profile's limits (KERNELS_EMULATE=profile,
// for the rest of t) and fails t unless it skipped exactly the steps the lesson's checks refuse there
// (RefusedAsChecked); it returns the env and the run for the lesson's own checks.
func RunEmulated(t *testing.T, l lab.Lesson, profile string) (*lab.Env, *record.Run) {
	t.Helper()
	t.Setenv(gpu.EmulateEnv, profile)
	env := Open(t)
	run, err := l.Run(env, true)
	if err != nil {
		t.Fatal(err)
	}
	RefusedAsChecked(t, env, l, run)
	return env, run
}

// OnProfiles shows the lesson's recorded run as each of Profiles would have measured it
// (lab.WithoutRefused) and fails t where a table shows NaN or Inf or a figure cannot be drawn;
// then it calls more, when not nil, with the profile's key, that run and its refused steps, for
// the lesson's own checks. Without a recorded run it skips.
func OnProfiles(t *testing.T, l lab.Lesson, more func(key string, run *record.Run, refused map[string]lab.StepCheck)) {
	t.Helper()
	rec, err := record.LoadFS(results.FS, l.ID)
	if err != nil {
		t.Skip(err)
	}
	for _, key := range Profiles {
		refused := l.RefusedOn(ProfileDevice(t, key))
		run := lab.WithoutRefused(rec, refused)
		for _, tb := range l.Tables(run) {
			for _, row := range tb.Rows {
				if line := strings.Join(row, " | "); strings.Contains(line, "NaN") || strings.Contains(line, "Inf") {
					t.Errorf("%s on %s: %s: %s", l.ID, key, tb.Title, line)
				}
			}
		}
		figs, err := l.Figures(run)
		if err != nil {
			t.Errorf("%s on %s: %v", l.ID, key, err)
		}
		for _, f := range figs {
			if f.Plot == nil {
				t.Errorf("%s on %s: %s has no plot", l.ID, key, f.Name)
			}
		}
		if more != nil {
			more(key, run, refused)
		}
	}
}

// EveryStepRuns fails t unless the lesson checks exactly steps, in order, on each of Profiles and
// every one of them runs there, and a bare device of compute capability 7.5 (no limits known beyond
// it) refuses none either: a lesson no GPU refuses anything of.
func EveryStepRuns(t *testing.T, l lab.Lesson, steps []string) {
	t.Helper()
	if n := len(l.RefusedOn(gpu.DeviceInfo{Major: 7, Minor: 5})); n != 0 {
		t.Errorf("%s: a bare 7.5 device refuses %d steps", l.ID, n)
	}
	for _, key := range Profiles {
		checks := l.StepsOn(ProfileDevice(t, key))
		if len(checks) != len(steps) {
			t.Fatalf("%s on %s: %d checks for %d steps", l.ID, key, len(checks), len(steps))
		}
		for i, c := range checks {
			if c.Step != steps[i] {
				t.Errorf("%s on %s: check %d is %q, step %q", l.ID, key, i, c.Step, steps[i])
			}
			if !c.Runs() {
				t.Errorf("%s: %s refuses %s: %s", l.ID, key, c.Step, c.Refused)
			}
		}
	}
}

// LaunchedEvery fails t unless the envs' sessions, together, launched every extern "C" kernel of
// every .cu file of dir (solutions included): how a package's sanitizer test proves it left no kernel
// out. Call it at the end of the test.
func LaunchedEvery(t testing.TB, dir compile.Files, envs ...*lab.Env) {
	t.Helper()
	var all []gpu.Launch
	for _, e := range envs {
		all = append(all, e.Session.Launches()...)
	}
	if err := sanitize.MissingError(dir, all); err != nil {
		t.Error(err)
	}
}

// OpenFresh opens the lab as a notebook does (its mode: no GPU, an emulated profile when
// KERNELS_EMULATE is set, or the GPU), with a compile cache of its own that starts empty, and
// closes it when the test ends: what the no-GPU tests of a cell's behaviour need.
func OpenFresh(t testing.TB) *lab.Env {
	t.Helper()
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	env, err := lab.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

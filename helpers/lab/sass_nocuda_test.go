//go:build nocuda

package lab

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/sass"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// In the no-GPU mode the SASS is the recorded GPU's architecture's, labelled so; Try shows the SASS
// of the reader's code, not the original's.
func TestSASSInTheNoGPUMode(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	env, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	var out bytes.Buffer
	old := show.Out
	show.Out = &out
	defer func() { show.Out = old }()
	src := compile.Source{Name: "k.cu", Code: "extern \"C\" __global__ void k(float4 *x) {\n  x[threadIdx.x] = x[threadIdx.x + 32];\n}\n"}
	l, err := env.SASS(src, compile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "sm_" + strings.TrimPrefix(env.Arch(), "compute_"); l.Arch != want {
		t.Errorf("SASS for %s, want the recorded GPU's %s", l.Arch, want)
	}
	env.ShowSASSCollapsed(src, compile.Options{})
	if s := out.String(); !strings.Contains(s, "for the recorded GPU") || !strings.Contains(s, "global loads, 128-bit") {
		t.Errorf("collapsed SASS output:\n%s", s)
	}
	out.Reset()
	mine := strings.Replace(src.Code, "x[threadIdx.x + 32]", "x[threadIdx.x + 64]", 1)
	tr := Trial{Step: "k", Lesson: "none",
		Compile: func(code string) ([]record.KernelReport, error) {
			s := src
			if code != "" {
				s.Code = code
			}
			p, err := env.Build(s, "k")
			if err != nil {
				return nil, err
			}
			return []record.KernelReport{p.Report("k", 32, 0)}, nil
		}}
	if err := env.Try(tr, mine); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Count(s, "--- SASS of k.cu") != 1 {
		t.Errorf("Try should show the SASS of the code it compiled once:\n%s", s)
	}
}

// refusedArch is an architecture this machine's NVRTC cannot compile for: compute_90a for NVRTC
// 11.8, compute_120 for 12.0 to 12.7, compute_70 for 13.x.
func refusedArch(t *testing.T) (string, *compile.ArchError) {
	t.Helper()
	for _, a := range []string{"compute_90a", "compute_120", "compute_70", "compute_990"} {
		var ae *compile.ArchError
		if err := compile.CheckArch(a); errors.As(err, &ae) {
			return a, ae
		}
	}
	t.Fatal("this NVRTC compiles for every architecture tried")
	return "", nil
}

// Where this NVRTC cannot compile a source's architecture, SASS shows the recorded listing of
// exactly that source and those options, labelled with the NVRTC and date it was recorded with and
// why it was not compiled here; a changed source, other options or no record leave the note.
func TestSASSFallsBackToTheRecordedListing(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	env, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	var out bytes.Buffer
	old := show.Out
	show.Out = &out
	defer func() { show.Out = old }()
	oldRec := recordedSASS
	defer func() { recordedSASS = oldRec }()

	arch, ae := refusedArch(t)
	src := compile.Source{Name: "k.cu", Code: "extern \"C\" __global__ void k(float4 *x) {\n  x[threadIdx.x] = x[threadIdx.x + 32];\n}\n"}
	opts := compile.Options{Arch: arch, Defines: []string{"N=4"}}
	// The record: a real listing of src made here, filed under the refused architecture, as cmd/profile
	// -sass files what a newer NVRTC made.
	made, err := env.SASS(src, compile.Options{Defines: opts.Defines})
	if err != nil {
		t.Fatal(err)
	}
	rec := sass.NewRecord(src, opts, made)
	rec.Arch = "sm_" + strings.TrimPrefix(arch, "compute_")
	dir := t.TempDir()
	if err := sass.Save(dir, &sass.File{Lesson: "08_hopper", Records: []sass.Record{rec},
		Receipt: sass.Receipt{NVRTC: "13.0", Tool: "nvdisasm 13.0", Date: "2026-11-27T12:00:00Z", Commit: "abc123"}}); err != nil {
		t.Fatal(err)
	}
	files, err := sass.Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}

	note := "No SASS for k.cu: compiling k.cu to a cubin: NVRTC " + ae.NVRTC + " cannot compile for " + arch
	recordedSASS = func() ([]sass.File, error) { return nil, nil }
	env.ShowSASSCollapsed(src, opts)
	if s := out.String(); !strings.Contains(s, note) || strings.Contains(s, "recorded with") {
		t.Errorf("with no record, want the note %q:\n%s", note, s)
	}

	recordedSASS = func() ([]sass.File, error) { return files, nil }
	out.Reset()
	env.ShowSASSCollapsed(src, opts)
	label := "recorded with NVRTC 13.0 for " + rec.Arch + " on 2026-11-27: this machine's NVRTC " + ae.NVRTC + " cannot compile for " + arch
	if s := out.String(); !strings.Contains(s, "--- SASS of k.cu") || !strings.Contains(s, label) || !strings.Contains(s, "global loads, 128-bit") || strings.Contains(s, "No SASS") {
		t.Errorf("with the record, want its count table labelled %q:\n%s", label, s)
	}
	l, err := env.SASS(src, opts)
	if err != nil || l.Recorded == nil || l.Kernels[0].Name != "k" || !sass.Has(l.Kernels[0], "LDG.E.128") {
		t.Errorf("SASS with the record: %v", err)
	}

	changed := src
	changed.Code = strings.Replace(src.Code, "+ 32", "+ 64", 1)
	for _, c := range []struct {
		what string
		src  compile.Source
		opts compile.Options
	}{
		{"a changed source", changed, opts},
		{"other defines", src, compile.Options{Arch: arch}},
	} {
		out.Reset()
		env.ShowSASSCollapsed(c.src, c.opts)
		if s := out.String(); !strings.Contains(s, note) || strings.Contains(s, "recorded with") {
			t.Errorf("%s matched the record, want the note %q:\n%s", c.what, note, s)
		}
	}
}

// Every recorded listing in results/sass reads, and names a source and a real architecture.
func TestRecordedSASSReads(t *testing.T) {
	files, err := recordedSASS()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		for _, r := range f.Records {
			if _, err := r.Listing("", f.Receipt); err != nil || r.Source == "" || !strings.HasPrefix(r.Arch, "sm_") || f.Receipt.NVRTC == "" || f.Receipt.Date == "" {
				t.Errorf("%s: record of %q for %q: %v (receipt %+v)", f.Lesson, r.Source, r.Arch, err, f.Receipt)
			}
		}
	}
}

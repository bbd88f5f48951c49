package sass

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
	kv "github.com/cudalessons/cudalessons/kernels/vecadd"
)

// realListing is testdata's real nvdisasm listing of kernels/vecadd/3_float4.cu for sm_90.
func realListing(t *testing.T) (compile.Source, *Listing) {
	t.Helper()
	b, err := os.ReadFile("testdata/float4_sm90_nvdisasm11.8.txt")
	if err != nil {
		t.Fatal(err)
	}
	kernels, err := Parse(string(b))
	if err != nil {
		t.Fatal(err)
	}
	src, err := kv.Source("3_float4.cu")
	if err != nil {
		t.Fatal(err)
	}
	return src, &Listing{Source: src.Name, Code: src.Code, Arch: "sm_90", NVRTC: "11.8", Tool: "nvdisasm 11.8 (/usr/bin/nvdisasm)", LineInfo: true, Kernels: kernels}
}

// A listing saved and loaded again is the same listing (every instruction, its source line and
// file), with the file's receipt, and counts the same.
func TestRecordRoundTrips(t *testing.T) {
	src, l := realListing(t)
	opts := compile.Options{Arch: "compute_90", Defines: []string{"N=4"}}
	rc := Receipt{NVRTC: "13.0", Tool: "nvdisasm 13.0 (/usr/local/cuda/bin/nvdisasm)", Date: "2026-11-27T12:00:00Z", Commit: "abc123"}
	dir := t.TempDir()
	if err := Save(dir, &File{Lesson: "00_setup", Receipt: rc, Records: []Record{NewRecord(src, opts, l)}}); err != nil {
		t.Fatal(err)
	}
	files, err := Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := Find(files, src, opts)
	if err != nil || !ok {
		t.Fatalf("Find: %v, found %v", err, ok)
	}
	if !reflect.DeepEqual(got.Kernels, l.Kernels) {
		t.Errorf("the loaded kernels differ from the saved ones")
	}
	if got.Recorded == nil || *got.Recorded != rc || got.NVRTC != "13.0" || got.Arch != "sm_90" || got.Code != src.Code || !got.LineInfo {
		t.Errorf("loaded listing: NVRTC %s, arch %s, receipt %+v, line info %v", got.NVRTC, got.Arch, got.Recorded, got.LineInfo)
	}
	if a, b := CountTable(got), CountTable(l); !reflect.DeepEqual(a.Rows, b.Rows) || len(a.Rows) < 7 {
		t.Errorf("count tables differ:\n%s\n%s", a.Text(), b.Text())
	}
	if p := got.Provenance(); !strings.Contains(p, "Recorded on 2026-11-27") || !strings.Contains(p, "NVRTC 13.0") {
		t.Errorf("provenance %q does not say it was recorded, and with which NVRTC", p)
	}
	if got.Text() != l.Text() {
		t.Errorf("the loaded listing's text differs")
	}
	st, err := os.Stat(filepath.Join(dir, "00_setup.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes for %d instructions", st.Size(), len(l.Kernels[0].Instructions))
	if per := st.Size() / int64(len(l.Kernels[0].Instructions)); per > 120 {
		t.Errorf("%d bytes a recorded instruction: keep the record compact", per)
	}
}

// Only the same source name, code and options match; the architecture counts as CompileCubin reads
// it (sm_90 is compute_90), NoCache does not count.
func TestFindMatchesOnlyTheExactKey(t *testing.T) {
	src, l := realListing(t)
	opts := compile.Options{Arch: "compute_90", Defines: []string{"N=4"}}
	files := []File{{Lesson: "00_setup", Records: []Record{NewRecord(src, opts, l)}}}
	same := []compile.Options{opts, {Arch: "sm_90", Defines: []string{"N=4"}}, {Arch: "compute_90", Defines: []string{"N=4"}, NoCache: true}}
	for _, o := range same {
		if _, ok, err := Find(files, src, o); !ok || err != nil {
			t.Errorf("options %+v: no match (%v)", o, err)
		}
	}
	changed := src
	changed.Code = strings.Replace(src.Code, "a4[i]", "a4[i + 0]", 1)
	if changed.Code == src.Code {
		t.Fatal("the test's change did not apply")
	}
	renamed := src
	renamed.Name = "my_" + src.Name
	other := []struct {
		what string
		src  compile.Source
		opts compile.Options
	}{
		{"changed code", changed, opts},
		{"another name", renamed, opts},
		{"another define", src, compile.Options{Arch: "compute_90", Defines: []string{"N=8"}}},
		{"no define", src, compile.Options{Arch: "compute_90"}},
		{"another architecture", src, compile.Options{Arch: "compute_90a", Defines: []string{"N=4"}}},
		{"fast math", src, compile.Options{Arch: "compute_90", Defines: []string{"N=4"}, FastMath: true}},
		{"extra flags", src, compile.Options{Arch: "compute_90", Defines: []string{"N=4"}, Extra: []string{"-G"}}},
	}
	for _, o := range other {
		if _, ok, _ := Find(files, o.src, o.opts); ok {
			t.Errorf("%s matched the record", o.what)
		}
	}
}

// A damaged instruction line is an error naming it, and a file whose lesson is not its name is
// refused.
func TestRecordRefusesDamage(t *testing.T) {
	src, l := realListing(t)
	r := NewRecord(src, compile.Options{}, l)
	r.Kernels[0].Instructions[3] = "zz\t1"
	if _, err := r.Listing(src.Code, Receipt{}); err == nil || !strings.Contains(err.Error(), "zz") {
		t.Errorf("damaged record: %v", err)
	}
	dir := t.TempDir()
	if err := Save(dir, &File{Lesson: "08_hopper"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "08_hopper.json"), filepath.Join(dir, "00_setup.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(os.DirFS(dir)); err == nil || !strings.Contains(err.Error(), "08_hopper") {
		t.Errorf("a file under another lesson's name: %v", err)
	}
}

package record

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func TestSaveLoadAndSpeedup(t *testing.T) {
	r := &Run{Lesson: "demo", Receipt: Receipt{Date: "2026-01-02T03:04:05Z"}}
	r.Receipt.Device.Name = "Test GPU"
	r.Add(Record{Case: "fwd", Variant: "v0", MedianMS: 8})
	r.Add(Record{Case: "fwd", Variant: "v1", MedianMS: 2})
	path := filepath.Join(t.TempDir(), "demo.json")
	if err := r.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Records) != 2 || back.Records[1].Device != "Test GPU" || back.Records[0].Lesson != "demo" {
		t.Fatalf("round trip lost fields: %+v", back.Records)
	}
	s, err := back.Speedup("fwd", "v0", "v1")
	if err != nil || s != 4 {
		t.Errorf("speedup = %v, %v; want 4", s, err)
	}
	if _, err := back.Speedup("fwd", "v0", "v9"); err == nil {
		t.Error("speedup over an unmeasured variant did not fail")
	}
}

// A sweep's variants come in the order they were first measured, its sizes ascending, each once,
// and another case's records count for neither.
func TestVariantsAndSizesOfACase(t *testing.T) {
	r := &Run{}
	for _, rec := range []Record{
		{Case: "sweep", Variant: "b", Size: 64}, {Case: "sweep", Variant: "a", Size: 64},
		{Case: "sweep", Variant: "b", Size: 16}, {Case: "other", Variant: "c", Size: 8},
		{Case: "sweep", Variant: "a", Size: 1024}, {Case: "sweep", Variant: "a", Size: 16},
	} {
		r.Add(rec)
	}
	if got := r.Variants("sweep"); !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("Variants = %v; want [b a]", got)
	}
	if got := r.Sizes("sweep"); !slices.Equal(got, []int64{16, 64, 1024}) {
		t.Errorf("Sizes = %v; want [16 64 1024]", got)
	}
	if got := r.Variants("none"); len(got) != 0 || len(r.Sizes("none")) != 0 {
		t.Errorf("a case without records has variants %v, sizes %v", got, r.Sizes("none"))
	}
}

func TestLoadFSNamesWhatIsRecorded(t *testing.T) {
	fsys := fstest.MapFS{"a.json": {Data: []byte(`{"lesson":"a"}`)}}
	if r, err := LoadFS(fsys, "a"); err != nil || r.Lesson != "a" {
		t.Fatalf("LoadFS(a) = %v, %v", r, err)
	}
	_, err := LoadFS(fsys, "b")
	if err == nil || !strings.Contains(err.Error(), "recorded: a") {
		t.Errorf("want an error naming the recorded lessons, got %v", err)
	}
}

// A receipt names both CUDA versions of a run (the headers cgo built against, the NVRTC that
// compiled the kernels) and the architecture compiled for.
func TestReceiptNamesHeadersNVRTCAndArch(t *testing.T) {
	r := Receipt{CUDAHeaders: "11.8", NVRTC: "13.0", Arch: "compute_90"}
	s := r.String()
	for _, want := range []string{"built against CUDA 11.8 headers", "NVRTC 13.0 for compute_90"} {
		if !strings.Contains(s, want) {
			t.Errorf("receipt %q lacks %q", s, want)
		}
	}
}

// A record of a failed check whose error is NaN or Inf saves (JSON has neither) and loads back
// as a failure with the largest float64 as its error; a finite record round-trips exactly.
func TestNonFiniteRecordsSave(t *testing.T) {
	run := &Run{Lesson: "x"}
	run.Add(Record{Case: "stability", Variant: "2 partial sums (article)", Kind: "kernel", MedianMS: 0.34, GBps: 1679.6, RelL2: math.NaN(), Correct: false})
	run.Add(Record{Case: "c", Variant: "v", Kind: "kernel", MedianMS: 1.5, RelL2: 2e-7, MaxAbs: math.Inf(1), Correct: true, GFLOPs: math.NaN()})
	run.Add(Record{Case: "c", Variant: "w", Kind: "kernel", MedianMS: 2, RelL2: 3e-7, MaxAbs: 1e-6, Correct: true})
	path := filepath.Join(t.TempDir(), "x.json")
	if err := run.Save(path); err != nil {
		t.Fatalf("saving a record with a NaN error: %v", err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := back.Records[0], back.Records[1], back.Records[2]
	if a.RelL2 != math.MaxFloat64 || a.Correct || a.MedianMS != 0.34 || a.GBps != 1679.6 || a.Variant != "2 partial sums (article)" {
		t.Errorf("the NaN record came back as %+v", a)
	}
	if b.MaxAbs != math.MaxFloat64 || b.RelL2 != 2e-7 || b.GFLOPs != 0 || !b.Correct {
		t.Errorf("the Inf record came back as %+v", b)
	}
	if c != run.Records[2] {
		t.Errorf("a finite record changed: %+v vs %+v", c, run.Records[2])
	}
}

package record

import (
	"path/filepath"
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

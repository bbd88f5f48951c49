// Package record is the suite's receipts: every measurement carries the GPU, driver, CUDA and NVRTC
// versions, clocks, date, shapes and method, and saves to and loads from JSON so that a script can
// check the numbers. The recorded results of a real GPU run (the top-level results folder) are what
// the no-GPU mode shows.
package record

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/gpu"
)

// Receipt says where and how a run was measured.
type Receipt struct {
	Device        gpu.DeviceInfo `json:"device"`
	DriverRelease string         `json:"driver_release"` // as nvidia-smi prints it, e.g. "580.95.05"
	CUDADriver    string         `json:"cuda_driver"`    // the CUDA version the driver supports
	CUDAHeaders   string         `json:"cuda_headers"`   // the CUDA version of the cuda.h cgo built gorgonia.org/cu against
	NVRTC         string         `json:"nvrtc"`          // the version of the NVRTC that compiled the kernels
	Arch          string         `json:"arch"`           // the architecture the kernels were compiled for
	CopyGBps      float64        `json:"copy_gbps"`
	PeakGFLOPS    float64        `json:"peak_fp32_gflops"`
	Method        string         `json:"method"`
	Date          string         `json:"date"` // RFC 3339, UTC
	GoVersion     string         `json:"go"`
	Torch         string         `json:"torch,omitempty"`
	Host          string         `json:"host,omitempty"`
	Commit        string         `json:"commit,omitempty"` // the project's commit (ProjectCommit) the run was made at
}

// PeakFP32 is the FP32 peak in TFLOP/s.
func (r Receipt) PeakFP32() float64 { return r.PeakGFLOPS / 1e3 }

// String is a one-paragraph receipt for captions.
func (r Receipt) String() string {
	torch := ""
	if r.Torch != "" {
		torch = ", PyTorch " + r.Torch
	}
	headers := ""
	if r.CUDAHeaders != "" {
		headers = ", built against CUDA " + r.CUDAHeaders + " headers"
	}
	commit := ""
	if r.Commit != "" {
		commit = ", commit " + r.Commit
	}
	return fmt.Sprintf("%s, driver %s (CUDA %s)%s, NVRTC %s for %s, measured copy bandwidth %.0f GB/s, FP32 peak %.1f TFLOP/s at %d MHz%s; %s; %s%s",
		r.Device.Name, r.DriverRelease, r.CUDADriver, headers, r.NVRTC, r.Arch, r.CopyGBps, r.PeakGFLOPS/1e3, r.Device.ClockMHz, torch, r.Method, r.Date, commit)
}

// Record is one measured variant of one case.
type Record struct {
	Lesson  string `json:"lesson"`
	Case    string `json:"case"`    // the problem, e.g. "forward" or "mul"
	Variant string `json:"variant"` // the step, e.g. "v2 float4" or "PyTorch"
	Kind    string `json:"kind"`    // "kernel", "baseline" or "reference"
	DType   string `json:"dtype"`
	Shape   string `json:"shape"`
	Size    int64  `json:"size,omitempty"` // the swept quantity, for size sweeps

	MedianMS float64 `json:"median_ms"`
	MinMS    float64 `json:"min_ms"`
	MaxMS    float64 `json:"max_ms"`
	GBps     float64 `json:"gbps"`
	PctBW    float64 `json:"pct_peak_bw"`
	GFLOPs   float64 `json:"gflops"`
	PctFLOPs float64 `json:"pct_peak_flops"` // of the peak PeakOf names (Receipt.PeakFor the dtype)
	// PeakOf names the peak PctFLOPs is a share of: "FP32 peak", "TF32 tensor peak (datasheet)".
	// Receipts written before it have none, and their PctFLOPs is of the FP32 peak for every dtype:
	// shown, a share is recomputed from GFLOPs by Receipt.FLOPShare, whichever the receipt's age.
	PeakOf string `json:"pct_peak_flops_of,omitempty"`

	RelL2   float64 `json:"rel_l2"`
	MaxAbs  float64 `json:"max_abs"`
	Correct bool    `json:"correct"`
	Tol     string  `json:"tolerance,omitempty"`

	Device string `json:"device"`
	Date   string `json:"date"`
	Note   string `json:"note,omitempty"`
}

// KernelReport is the compile report of one kernel at one launch configuration.
type KernelReport struct {
	Kernel             string  `json:"kernel"`
	Source             string  `json:"source"`
	Arch               string  `json:"arch"`
	Registers          int     `json:"registers"`
	StaticSharedBytes  int     `json:"static_shared_bytes"`
	LocalBytes         int     `json:"local_bytes"`
	MaxThreadsPerBlock int     `json:"max_threads_per_block"`
	Block              int     `json:"block"`
	DynamicShared      int     `json:"dynamic_shared_bytes"`
	BlocksPerSM        int     `json:"blocks_per_sm"`
	Occupancy          float64 `json:"occupancy"`
	Limiter            string  `json:"limiter"`
	Measured           bool    `json:"measured"` // false: only what the PTX tells (no GPU)
}

// Run is everything one lesson measured in one process.
type Run struct {
	Lesson  string         `json:"lesson"`
	Receipt Receipt        `json:"receipt"`
	Records []Record       `json:"records"`
	Kernels []KernelReport `json:"kernels,omitempty"`
}

// Add appends a record, stamping it with the run's lesson, device and date.
func (r *Run) Add(rec Record) {
	if rec.Lesson == "" {
		rec.Lesson = r.Lesson
	}
	rec.Device, rec.Date = r.Receipt.Device.Name, r.Receipt.Date
	r.Records = append(r.Records, rec)
}

// Find returns the record of a case and variant (and size, when not zero).
func (r *Run) Find(caseName, variant string, size int64) (Record, bool) {
	for _, rec := range r.Records {
		if rec.Case == caseName && rec.Variant == variant && (size == 0 || rec.Size == size) {
			return rec, true
		}
	}
	return Record{}, false
}

// Median is the median time in ms of a case's variant in this run, or 0 when it was not measured.
func (r *Run) Median(caseName, variant string) float64 {
	if rec, ok := r.Find(caseName, variant, 0); ok {
		return rec.MedianMS
	}
	return 0
}

// Select returns the records of a case, in the order they were added.
func (r *Run) Select(caseName string) []Record {
	var out []Record
	for _, rec := range r.Records {
		if rec.Case == caseName {
			out = append(out, rec)
		}
	}
	return out
}

// Variants are the variants of a case's records, each once, in the order they first appear.
func (r *Run) Variants(caseName string) []string {
	var out []string
	for _, rec := range r.Select(caseName) {
		if !slices.Contains(out, rec.Variant) {
			out = append(out, rec.Variant)
		}
	}
	return out
}

// Sizes are the sizes of a case's records, each once, ascending.
func (r *Run) Sizes(caseName string) []int64 {
	var out []int64
	for _, rec := range r.Select(caseName) {
		out = append(out, rec.Size)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Speedup is the ratio of the medians of two variants of a case in this run (base / variant).
func (r *Run) Speedup(caseName, base, variant string) (float64, error) {
	b, ok1 := r.Find(caseName, base, 0)
	v, ok2 := r.Find(caseName, variant, 0)
	if !ok1 || !ok2 || v.MedianMS <= 0 || b.MedianMS <= 0 {
		return 0, fmt.Errorf("speedup of %q over %q in %s: both must be measured in this run", variant, base, caseName)
	}
	return b.MedianMS / v.MedianMS, nil
}

// Merge appends the records and compile reports of src (a part of the same lesson measured
// separately, such as a section) and keeps its PyTorch version.
func (r *Run) Merge(src *Run) {
	r.Records = append(r.Records, src.Records...)
	r.Kernels = append(r.Kernels, src.Kernels...)
	if src.Receipt.Torch != "" {
		r.Receipt.Torch = src.Receipt.Torch
	}
}

// Save writes the run as indented JSON, non-finite numbers as Record.Finite writes them.
func (r *Run) Save(path string) error {
	out := *r
	out.Records = make([]Record, len(r.Records))
	for i, rec := range r.Records {
		out.Records[i] = rec.Finite()
	}
	data, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// Load reads a run saved by Save.
func Load(path string) (*Run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decode(data, path)
}

// LoadFS reads the run of a lesson from a folder of saved runs (the file <lesson>.json).
func LoadFS(fsys fs.FS, lesson string) (*Run, error) {
	name := lesson + ".json"
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		var have []string
		if entries, derr := fs.ReadDir(fsys, "."); derr == nil {
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".json") {
					have = append(have, strings.TrimSuffix(e.Name(), ".json"))
				}
			}
		}
		sort.Strings(have)
		return nil, fmt.Errorf("no recorded results for lesson %q (recorded: %s): run the reproduce command on a GPU and commit results/", lesson, strings.Join(have, ", "))
	}
	return decode(data, name)
}

func decode(data []byte, name string) (*Run, error) {
	var r Run
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return &r, nil
}

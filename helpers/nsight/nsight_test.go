package nsight

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testdata/details_constructed.csv is not a capture: no GPU is here. It is written by hand in the
// layout ncu documents for `--csv --page details --print-units base` and that its 2024-2025
// releases print: ==PROF== lines first (and whatever the program printed), then the header with
// the rule columns of newer versions, one quoted row per metric, thousands separators in values,
// "n/a" for a metric without a value, a rule's row with no metric, and the command-line metrics
// (section "Command line profiler metrics"). Two launches of add_float4: a small one, then the
// lesson's own. The values are plausible for an H200, not measurements.
func loadSample(t *testing.T) []Kernel {
	t.Helper()
	b, err := os.ReadFile("testdata/details_constructed.csv")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := ParseCSV(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func TestParseCSV(t *testing.T) {
	ks := loadSample(t)
	if len(ks) != 2 {
		t.Fatalf("%d kernels, want 2", len(ks))
	}
	k := ks[1]
	if k.ID != 1 || k.Name != "add_float4" || k.Grid != "(16384, 1, 1)" || k.Block != "(256, 1, 1)" || k.CC != "9.0" {
		t.Errorf("launch %+v", k)
	}
	if v, ok := k.Value("Duration"); !ok || v != 51808 {
		t.Errorf("Duration %v %v, want 51808 (thousands separator removed)", v, ok)
	}
	if m, ok := k.Metric("L2 Compression Success Rate"); !ok || m.OK || m.Text != "" {
		t.Errorf("n/a metric %+v", m)
	}
	for _, m := range k.Metrics {
		if m.Name == "" {
			t.Errorf("a rule's row became a metric: %+v", m)
		}
	}
	// "Memory Throughput" is in two sections with two units: both kept, told apart by section.
	var n int
	for _, m := range k.Metrics {
		if m.Name == "Memory Throughput" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d Memory Throughput metrics, want 2", n)
	}
	if v, ok := k.Value("dram__bytes_read.sum"); !ok || v != 134217728 {
		t.Errorf("command-line metric %v %v", v, ok)
	}
	if _, err := ParseCSV("==PROF== Disconnected from process 1\n"); err == nil || !strings.Contains(err.Error(), "no CSV") {
		t.Errorf("no header: %v", err)
	}
	if _, err := ParseCSV(`"ID","Process ID","Kernel Name","Section Name","Metric Name","Metric Value"` + "\n"); err == nil {
		t.Error("a header with no row parsed")
	}
	if _, err := ParseCSV(`"ID","Process ID","Kernel Name"` + "\n"); err == nil || !strings.Contains(err.Error(), "has no \"Section Name\" column") {
		t.Errorf("a header without the metric columns: %v", err)
	}
}

func TestStallsTableAndChart(t *testing.T) {
	ks := loadSample(t)
	st := ks[1].Stalls()
	if len(st) != 3 || st[0].Reason != "long scoreboard" || st[0].PerIssue != 48.2 || st[2].Reason != "not selected" {
		t.Errorf("stalls %+v (want largest first, zeros left out)", st)
	}
	f := &File{Lesson: "00_setup", Receipt: Receipt{GPU: "NVIDIA H200", Driver: "580.159.04", NCU: "Nsight Compute 2025.3.1.0", Date: "2026-11-27T12:00:00Z"},
		Profiles: []Profile{{Step: "float4", Question: "16-byte loads", Kernel: ks[1]}}}
	tab := Table(f)
	text := tab.Text()
	for _, want := range []string{"DRAM throughput, % of peak", "91.9%", "4413 GB/s", "51.8 µs", "33.4%", "(16384, 1, 1) x (256, 1, 1)", "NVIDIA H200", "2026-11-27"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	if !strings.Contains(text, "dram__bytes_read.sum") && !strings.Contains(text, "DRAM bytes read") {
		t.Errorf("a command-line metric is missing:\n%s", text)
	}
	f.Profiles[0].Kernel.Metrics = append(f.Profiles[0].Kernel.Metrics, Metric{Section: CommandLineSection, Name: "l1tex__m_dsmem_bytes.sum", Unit: "byte", Value: 2048, OK: true})
	if text := Table(f).Text(); !strings.Contains(text, "l1tex__m_dsmem_bytes.sum") || !strings.Contains(text, "2.0 kB") {
		t.Errorf("a command-line metric that no row names is not shown by name:\n%s", text)
	}
	f.Profiles[0].Kernel.Metrics = f.Profiles[0].Kernel.Metrics[:len(f.Profiles[0].Kernel.Metrics)-1]
	if strings.Contains(text, "bank conflicts") {
		t.Errorf("a row no profile has is shown:\n%s", text)
	}
	p, err := StallChart(f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Title.Text, "NVIDIA H200") || !strings.Contains(p.Title.Text, "2026-11-27") {
		t.Errorf("chart title %q does not say the GPU and the date", p.Title.Text)
	}
	dir := t.TempDir()
	if err := Save(filepath.Join(dir, "profiles"), f); err != nil {
		t.Fatal(err)
	}
	g, err := Load(os.DirFS(dir), "00_setup")
	if err != nil || len(g.Profiles) != 1 || g.Profiles[0].Kernel.Name != "add_float4" || g.Receipt.GPU != "NVIDIA H200" {
		t.Errorf("load after save: %+v %v", g, err)
	}
	if _, err := Load(os.DirFS(dir), "03_matmul"); err == nil || !strings.Contains(err.Error(), "make profile") {
		t.Errorf("missing profile: %v", err)
	}
}

func TestArgs(t *testing.T) {
	a := strings.Join(Args(Options{Kernel: "^mm_tf32$", LaunchSkip: 2, Sections: []string{SpeedOfLight, Occupancy}, Metrics: []string{"a.sum", StallMetrics}}), " ")
	for _, want := range []string{"--csv --page details --print-units base", "--kernel-name regex:^mm_tf32$", "--launch-skip 2", "--launch-count 1",
		"--section SpeedOfLight --section Occupancy", "--metrics a.sum," + StallMetrics} {
		if !strings.Contains(a, want) {
			t.Errorf("args %q lack %q", a, want)
		}
	}
}

// ERR_NVGPUCTRPERM, as ncu prints it when the driver restricts the counters to administrators: the
// error says so and how to allow it. A script stands in for ncu (no GPU here), printing ncu's
// message and status.
func TestCountersRestricted(t *testing.T) {
	home := t.TempDir()
	bin := filepath.Join(home, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `#!/bin/sh
if [ "$1" = --version ]; then echo "NVIDIA (R) Nsight Compute Command Line Profiler"; echo "Version 2025.3.1.0 (build 36398880) (public-release)"; exit 0; fi
echo "==PROF== Connected to process 4242 (/tmp/profile)"
echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the target device 0. For instructions on enabling permissions and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM"
echo "==PROF== Disconnected from process 4242"
exit 1
`
	if err := os.WriteFile(filepath.Join(bin, "ncu"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CUDA_HOME", home)
	tool, err := FindTool()
	if err != nil || tool.Version != "2025.3.1.0" || tool.Path != filepath.Join(bin, "ncu") {
		t.Fatalf("tool %+v %v", tool, err)
	}
	_, err = Run(context.Background(), Options{Kernel: "add"}, []string{"true"})
	var ce *CountersError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCountersRestricted) {
		t.Fatalf("want a *CountersError, got %v", err)
	}
	for _, want := range []string{"only administrators", "NVreg_RestrictProfilingToAdminUsers=0", "ERR_NVGPUCTRPERM", "INSTRUCTORS.md"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q: %s", want, err)
		}
	}
	if _, err := Run(context.Background(), Options{}, nil); err == nil {
		t.Error("no command ran")
	}
}

// testdata/details_h200_ncu2025.3.1.csv is a capture: Nsight Compute 2025.3.1 on an H200, the
// float4 vector add of lesson 00 under `--csv --page details --print-units base`, first with the
// SpeedOfLight section, then with the warp stall sampling metrics (two runs of the same launch, cut
// to their first rows). ncu leaves a metric row's empty rule columns off, so its rows are shorter
// than the header: the constructed sample above did not have that, and the parser skipped every row.
func TestParseCSVCaptured(t *testing.T) {
	b, err := os.ReadFile("testdata/details_h200_ncu2025.3.1.csv")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := ParseCSV(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 1 || ks[0].Name != "add_float4" || ks[0].Grid != "(4224, 1, 1)" {
		t.Fatalf("kernels %+v, want the one add_float4 launch", ks)
	}
	k := ks[0]
	if v, ok := k.Value("DRAM Throughput"); !ok || v != 87.45 {
		t.Errorf("DRAM Throughput %v %v, want 87.45", v, ok)
	}
	if v, ok := k.Value("Elapsed Cycles"); !ok || v != 273723 {
		t.Errorf("Elapsed Cycles %v %v, want 273723", v, ok)
	}
	if v, ok := k.Value("smsp__pcsamp_warps_issue_stalled_long_scoreboard"); !ok || v != 16785 {
		t.Errorf("long scoreboard stalls %v %v, want 16785", v, ok)
	}
	if _, ok := k.Metric("SOLBottleneck"); ok {
		t.Error("a rule's row read as a metric")
	}
}

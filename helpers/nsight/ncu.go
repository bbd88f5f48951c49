// Package nsight profiles kernels with Nsight Compute (ncu) in a subprocess and reads its results:
// any command runs under ncu with the sections that answer a lesson's question, ncu's CSV is parsed
// into metrics per profiled kernel, and the profiles are recorded (results/profiles, one file per
// lesson) so that the no-GPU mode shows them, labelled with the GPU and the date.
//
//	res, err := nsight.Run(ctx, nsight.Options{Kernel: "add_float4", Sections: nsight.MemorySections}, []string{"./vecadd.test", "-test.run", "X"})
//
// The profiled program keeps no profiler state after it exits, and the GPU is free again.
package nsight

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Section names of ncu (ncu --list-sections).
const (
	SpeedOfLight           = "SpeedOfLight"
	MemoryWorkloadAnalysis = "MemoryWorkloadAnalysis"
	ComputeWorkload        = "ComputeWorkloadAnalysis"
	Occupancy              = "Occupancy"
	LaunchStats            = "LaunchStats"
	WarpStateStats         = "WarpStateStats"
	SchedulerStats         = "SchedulerStats"
	SourceCounters         = "SourceCounters"
)

// StallMetrics asks for every warp stall reason: the average number of warps stalled for it per
// issued instruction (the chart of ncu's Warp State section).
const StallMetrics = `regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$`

// Options choose what ncu profiles and collects.
type Options struct {
	// Kernel is a regular expression matched against the kernel's name ("add_float4", "mm_.*").
	Kernel string
	// LaunchSkip is how many matching launches to let run first (warm-up, a check on a small
	// shape); LaunchCount how many to profile after them (0 means 1).
	LaunchSkip, LaunchCount int
	// Sections are ncu sections; Metrics are extra metric names (or "regex:..." patterns).
	Sections []string
	Metrics  []string
	// Env is added to the profiled command's environment.
	Env []string
}

// Tool is the ncu that runs: its path and version ("2025.3.1.0").
type Tool struct {
	Path    string
	Version string
}

// String is "Nsight Compute 2025.3.1.0 (/usr/local/cuda/bin/ncu)".
func (t Tool) String() string { return fmt.Sprintf("Nsight Compute %s (%s)", t.Version, t.Path) }

var ncuVersion = regexp.MustCompile(`Version (\S+)`)

// FindTool finds ncu: $CUDA_HOME/bin, /usr/local/cuda/bin, then PATH (the toolkit of the GPU's
// driver; Debian's 11.8 Nsight Compute does not profile on a CUDA 13 driver).
func FindTool() (Tool, error) {
	var tried []string
	for _, d := range []string{os.Getenv("CUDA_HOME"), "/usr/local/cuda"} {
		if d == "" {
			continue
		}
		p := filepath.Join(d, "bin", "ncu")
		tried = append(tried, p)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return toolAt(p)
		}
	}
	p, err := exec.LookPath("ncu")
	if err != nil {
		return Tool{}, fmt.Errorf("no Nsight Compute (ncu) in %s or on PATH: profiling needs the CUDA toolkit's ncu (NVIDIA's CUDA toolkit installs it in /usr/local/cuda/bin)", strings.Join(tried, ", "))
	}
	return toolAt(p)
}

func toolAt(path string) (Tool, error) {
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		return Tool{}, fmt.Errorf("%s --version: %v: %s", path, err, bytes.TrimSpace(out))
	}
	t := Tool{Path: path, Version: "of unknown version"}
	if m := ncuVersion.FindSubmatch(out); m != nil {
		t.Version = string(m[1])
	}
	return t, nil
}

// Args are ncu's arguments for opts, before the profiled command: CSV of the details page in base
// units (bytes, not Kbyte/Gbyte), the kernel filter, the launches, the sections and metrics.
func Args(opts Options) []string {
	args := []string{"--csv", "--page", "details", "--print-units", "base", "--target-processes", "all"}
	if opts.Kernel != "" {
		args = append(args, "--kernel-name", "regex:"+opts.Kernel)
	}
	if opts.LaunchSkip > 0 {
		args = append(args, "--launch-skip", strconv.Itoa(opts.LaunchSkip))
	}
	count := opts.LaunchCount
	if count <= 0 {
		count = 1
	}
	args = append(args, "--launch-count", strconv.Itoa(count))
	for _, s := range opts.Sections {
		args = append(args, "--section", s)
	}
	if len(opts.Metrics) > 0 {
		args = append(args, "--metrics", strings.Join(opts.Metrics, ","))
	}
	return args
}

// Result is what one ncu run gave: the kernels it profiled and its own messages.
type Result struct {
	Tool    Tool
	Kernels []Kernel
	Command []string // the full command line that ran
	Log     string   // ncu's ==PROF==, ==WARNING== and ==ERROR== lines
}

// ErrCountersRestricted is returned (wrapped in a *CountersError) when the driver lets only
// administrators read the GPU's performance counters (ncu's ERR_NVGPUCTRPERM).
var ErrCountersRestricted = errors.New("GPU performance counters are restricted to administrators")

// CountersError is ERR_NVGPUCTRPERM, explained: what it means and how an administrator allows it.
type CountersError struct{ Log string }

func (e *CountersError) Error() string { return CountersHelp }

func (e *CountersError) Unwrap() error { return ErrCountersRestricted }

// CountersHelp says what ERR_NVGPUCTRPERM means and how to allow profiling.
const CountersHelp = "Profiling is not allowed here: the NVIDIA driver lets only administrators read the GPU's performance counters (Nsight Compute's ERR_NVGPUCTRPERM). " +
	"Run as root, or have an administrator allow every user: on Linux, a file /etc/modprobe.d/nvidia-profiling.conf with the line " +
	"`options nvidia NVreg_RestrictProfilingToAdminUsers=0`, then reload the driver or reboot (on Windows, NVIDIA Control Panel > Developer > Manage GPU Performance Counters > Allow access to all users). " +
	"The counters show what each kernel does on the GPU (throughputs, cache hit rates, stall reasons), not other users' data: docs/INSTRUCTORS.md says more. " +
	"The recorded profiles below need no counters."

// Run profiles argv under ncu with opts and parses the result. It fails with a *CountersError when
// the counters are restricted, and with an error naming the command and ncu's log when ncu or the
// command fails or nothing matched the kernel filter.
func Run(ctx context.Context, opts Options, argv []string) (*Result, error) {
	if len(argv) == 0 {
		return nil, errors.New("profiling: no command to run under ncu")
	}
	tool, err := FindTool()
	if err != nil {
		return nil, err
	}
	full := append(Args(opts), argv...)
	cmd := exec.CommandContext(ctx, tool.Path, full...)
	cmd.Env = append(os.Environ(), opts.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	res, perr := Parse(tool, append([]string{tool.Path}, full...), stdout.String()+"\n"+stderr.String())
	var ce *CountersError
	if errors.As(perr, &ce) {
		return res, perr
	}
	if runErr != nil {
		return res, fmt.Errorf("ncu %s: %v\n%s", strings.Join(argv, " "), runErr, tail(res.Log+"\n"+stderr.String(), 2000))
	}
	if perr != nil {
		return res, fmt.Errorf("ncu %s: %w", strings.Join(argv, " "), perr)
	}
	return res, nil
}

// Parse reads what a run under ncu printed (its CSV details page, its messages, the program's own
// lines between them): the profiled kernels, or a *CountersError when the counters are
// restricted, or an error with ncu's messages when it profiled nothing. command is the command line
// that ran, for the Result.
func Parse(tool Tool, command []string, output string) (*Result, error) {
	res := &Result{Tool: tool, Command: command, Log: profLines(output)}
	if strings.Contains(output, "ERR_NVGPUCTRPERM") {
		return res, &CountersError{Log: res.Log}
	}
	kernels, err := ParseCSV(output)
	if err != nil {
		return res, fmt.Errorf("%w\n%s", err, tail(res.Log, 2000))
	}
	res.Kernels = kernels
	return res, nil
}

func profLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "==PROF==") || strings.HasPrefix(l, "==WARNING==") || strings.HasPrefix(l, "==ERROR==") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

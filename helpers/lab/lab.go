// Package lab is the bench every lesson and notebook starts from: it opens the GPU (or says plainly
// that it runs in the no-GPU mode and why), compiles and loads kernels with their compile report,
// measures with the suite's method, and writes receipts.
//
//	env, err := lab.Open()
//	if err != nil { ... }
//	defer env.Close()
//	fmt.Println(env.Banner())
//	prog, err := env.Build(compile.Source{Name: "add.cu", Code: src}, "add")
//
// In the GPU mode (the default build, with a GPU) Env.Session is open. In the no-GPU mode (the
// nocuda build tag, chosen by the Makefile when no GPU answers) Env.Session is nil, kernels still
// compile with NVRTC for the recorded GPU's architecture, CPU references run, and Env.Recorded returns
// the results of a real GPU run.
package lab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/sass"
	"github.com/cudalessons/cudalessons/results"
)

// Mode says whether kernels run on a GPU or results come from a recorded run.
type Mode int

const (
	// GPUMode runs kernels on the GPU and measures them.
	GPUMode Mode = iota
	// NoGPUMode compiles kernels and runs CPU references; timings are recorded ones.
	NoGPUMode
)

func (m Mode) String() string {
	if m == GPUMode {
		return "GPU mode"
	}
	return "no-GPU mode"
}

// Env is an open lab: the mode, the session and bench in the GPU mode, the receipt of this run (GPU
// mode) or of the recorded run (no-GPU mode).
type Env struct {
	Mode    Mode
	Session *gpu.Session // nil in the no-GPU mode
	Bench   *bench.Bench // nil in the no-GPU mode
	Receipt record.Receipt
	// Why is the reason for the no-GPU mode.
	Why error
	// Quick says that runs use the short method: fewer repetitions and sweep points, the same
	// headline cases (Options.Quick, or KERNELS_QUICK=1 for every cell of a notebook).
	Quick bool

	programs map[string]*Program // built sources, by source and options
	built    []*Program          // every BuildWith's program, in order (Try shows the SASS of its own)
	// reader is set while a reader's code is built and run (Try, Exercise): its sources are
	// assembled for the real architecture first (preflight), so that limits show before a launch.
	reader bool
	// unlock drops the GPU lock (GPULockEnv) this process holds, at Close.
	unlock func()
	// keptSASS holds the record of every listing SASS made here, once KeepSASS asked for them.
	keptSASS *[]sass.Record
}

// Options tune Open.
type Options struct {
	// Quick uses bench.Quick instead of bench.Default, and quick runs; KERNELS_QUICK=1 sets it too.
	Quick bool
	// RefreshCopyBandwidth measures the copy bandwidth again instead of using the cached figure.
	RefreshCopyBandwidth bool
	// NoGPU opens the no-GPU mode even where a GPU answers: the recorded GPU's receipt and
	// architecture, as on a machine without one (how cmd/profile -sass records what that mode asks).
	NoGPU bool
}

// QuickEnv set to 1 makes every env use the short method (Options.Quick): how the GPU matrix
// (cmd/gpus) runs every notebook under every profile in minutes.
const QuickEnv = "KERNELS_QUICK"

// RecordedDevice is the lesson whose receipt describes the recorded GPU in the no-GPU mode.
const RecordedDevice = "00_setup"

// Open opens the lab with the default options.
func Open() (*Env, error) { return OpenWith(Options{}) }

// OpenWith opens the GPU, measures (or reads the cached) copy bandwidth and fills the receipt. With
// no GPU it returns a no-GPU Env and no error; any other failure is an error.
func OpenWith(opts Options) (*Env, error) {
	opts.Quick = opts.Quick || os.Getenv(QuickEnv) == "1"
	nvrtcVersion, err := compile.Version()
	if err != nil {
		return nil, fmt.Errorf("NVRTC is not usable (install the CUDA headers and NVRTC with bash .ci/setup.sh): %w", err)
	}
	if opts.NoGPU {
		return openNoGPU(fmt.Errorf("%w: the no-GPU mode was asked for (lab.Options.NoGPU)", gpu.ErrNoGPU), nvrtcVersion)
	}
	unlock, err := lockGPU()
	if err != nil {
		return nil, err
	}
	s, err := gpu.Open()
	if errors.Is(err, gpu.ErrNoGPU) {
		unlock()
		return openNoGPU(err, nvrtcVersion)
	}
	if err != nil {
		unlock()
		return nil, fmt.Errorf("opening the GPU: %w", err)
	}
	b := bench.New(s)
	if opts.Quick {
		b.Method = bench.Quick
	}
	env := &Env{Mode: GPUMode, Session: s, Bench: b, Quick: opts.Quick, unlock: unlock}
	d := s.Device
	env.Receipt = record.Receipt{
		Device:        d,
		DriverRelease: DriverRelease(),
		CUDADriver:    d.Driver(),
		CUDAHeaders:   gpu.HeaderVersion(),
		NVRTC:         nvrtcVersion,
		Arch:          d.Arch(),
		PeakGFLOPS:    d.PeakFP32GFLOPS(),
		Method:        b.Method.String(),
		Date:          time.Now().UTC().Format(time.RFC3339),
		GoVersion:     runtime.Version(),
		Commit:        record.ProjectCommit(),
	}
	env.Receipt.Host, _ = os.Hostname()
	bw, err := b.CopyBandwidth(opts.RefreshCopyBandwidth)
	if err != nil {
		s.Close()
		unlock()
		return nil, err
	}
	env.Receipt.CopyGBps = bw
	if tool := os.Getenv(gpu.SanitizerEnv); tool != "" {
		b.Method = bench.Once
		env.Receipt.Method = b.Method.String() + ", under compute-sanitizer " + tool + " (not a timing)"
	}
	return env, nil
}

// openNoGPU is the no-GPU Env: the recorded GPU's receipt, or, when KERNELS_EMULATE names a
// profile, that GPU emulating the profile (kernels compile for the profile's architecture, plans
// see its limits, and the recorded runs shown leave out the steps it cannot run).
func openNoGPU(why error, nvrtcVersion string) (*Env, error) {
	env := &Env{Mode: NoGPUMode, Why: why}
	if rec, rerr := record.LoadFS(results.FS, RecordedDevice); rerr == nil {
		env.Receipt = rec.Receipt
	}
	env.Receipt.NVRTC = nvrtcVersion
	if env.Receipt.Arch == "" {
		env.Receipt.Arch = "compute_90"
	}
	p, emulate, err := gpu.EmulatedProfile()
	if err != nil {
		return nil, err
	}
	if emulate {
		if env.Receipt.Device, err = gpu.Emulate(env.Receipt.Device, p); err != nil {
			return nil, err
		}
		env.Receipt.Arch = env.Receipt.Device.Arch()
	}
	return env, nil
}

// Device is the GPU the env's plans see: the session's in the GPU mode, the recorded one (or the
// profile it emulates) in the no-GPU mode.
func (e *Env) Device() gpu.DeviceInfo {
	if e.GPU() {
		return e.Session.Device
	}
	return e.Receipt.Device
}

// Emulating is the profile key the env emulates (KERNELS_EMULATE), or "".
func (e *Env) Emulating() string {
	if em := e.Receipt.Device.Emulation; em != nil {
		return em.Profile
	}
	return ""
}

// DriverRelease asks nvidia-smi for the driver's release number (the driver API only has the CUDA
// version), or says "unknown".
func DriverRelease() string {
	out, err := exec.Command("nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(strings.Split(string(out), "\n")[0])
}

// Close frees the bench's buffers and releases the GPU.
func (e *Env) Close() error {
	if e == nil || e.Session == nil {
		return nil
	}
	e.Bench.Close()
	err := e.Session.Close()
	if e.unlock != nil {
		e.unlock()
	}
	return err
}

// GPU reports whether kernels run here.
func (e *Env) GPU() bool { return e.Mode == GPUMode }

// Arch is the architecture kernels are compiled for: the GPU's, or the recorded GPU's.
func (e *Env) Arch() string { return e.Receipt.Arch }

// Banner says in a sentence or two which mode runs and why.
func (e *Env) Banner() string {
	r := e.Receipt
	emu := ""
	if em := r.Device.Emulation; em != nil {
		emu = fmt.Sprintf(" Emulating the %s limits (%s=%s): steps the %s cannot run are refused, every time is the %s's.", em.Profile, gpu.EmulateEnv, em.Profile, em.Profile, em.Host.Name)
	}
	if e.GPU() {
		return fmt.Sprintf("GPU mode: %s, driver %s (CUDA %s), NVRTC %s compiling for %s; copy bandwidth %.0f GB/s (measured), FP32 peak %.1f TFLOP/s.%s",
			r.Device, r.DriverRelease, r.CUDADriver, r.NVRTC, r.Arch, r.CopyGBps, r.PeakGFLOPS/1e3, emu)
	}
	rec := "no recorded run was found"
	if r.Device.Name != "" {
		rec = fmt.Sprintf("the timings shown are the recorded results of a real run on %s (driver %s, CUDA %s) on %s", r.Device.Hardware().Name, r.DriverRelease, r.CUDADriver, dateOf(r.Date))
	}
	return fmt.Sprintf("No-GPU mode (%v). Kernels still compile with NVRTC %s for %s and the CPU references run; %s.%s", e.Why, r.NVRTC, r.Arch, rec, emu)
}

func dateOf(rfc string) string {
	if t, err := time.Parse(time.RFC3339, rfc); err == nil {
		return t.Format("2006-01-02")
	}
	return rfc
}

// NewRun starts the record of a lesson's measurements in this env.
func (e *Env) NewRun(lesson string) *record.Run {
	return &record.Run{Lesson: lesson, Receipt: e.Receipt}
}

// Recorded returns the recorded run of a lesson (from the top-level results folder).
func (e *Env) Recorded(lesson string) (*record.Run, error) { return record.LoadFS(results.FS, lesson) }

// Measure times run with the env's method and turns it into a record of work w.
func (e *Env) Measure(rec record.Record, w bench.Work, run func() error) (record.Record, error) {
	if !e.GPU() {
		return rec, fmt.Errorf("%s %s: measuring needs a GPU (%s)", rec.Case, rec.Variant, e.Mode)
	}
	t, err := e.Bench.Time(run)
	if err != nil {
		return rec, fmt.Errorf("timing %s %s: %w", rec.Case, rec.Variant, err)
	}
	return e.WithTiming(rec, w, t), nil
}

// WithTiming fills a record's times and rates from a timing (also one measured elsewhere, such as
// PyTorch's, by the same method). Its FLOP share is of the peak of its dtype (Receipt.PeakFor: the
// FP32 peak, or the datasheet tensor-core peak of a tensor-core format), named in PeakOf.
func (e *Env) WithTiming(rec record.Record, w bench.Work, t bench.Timing) record.Record {
	peak := e.Receipt.PeakFor(rec.DType)
	rt := bench.RatesOf(w, t.Median, e.Receipt.CopyGBps, peak.GFLOPS)
	rec.MedianMS, rec.MinMS, rec.MaxMS = t.Median, t.Min, t.Max
	rec.GBps, rec.PctBW, rec.GFLOPs, rec.PctFLOPs = rt.GBps, rt.PctBW, rt.GFLOPs, rt.PctFLOPs
	switch {
	case rt.GFLOPs <= 0:
	case peak.Missing != "":
		rec.PeakOf = "unknown: " + peak.Missing
	default:
		rec.PeakOf = peak.Label()
	}
	return rec
}

// CopyRecord is the device-to-device copy as a record of a case: the 100% line of every bandwidth
// table, at the env's measured (median) copy bandwidth.
func (e *Env) CopyRecord(caseName string) record.Record {
	ms := 2 * bench.CopyBytes / (e.Receipt.CopyGBps * 1e9) * 1e3
	return e.WithTiming(record.Record{Case: caseName, Variant: "device copy", Kind: "baseline", DType: "bytes",
		Shape: CopyShape(), Note: "cuMemcpyDtoD, bytes read + written: the 100% line"},
		bench.Work{Bytes: 2 * bench.CopyBytes}, bench.Timing{Median: ms, Min: ms, Max: ms})
}

// Package bench times GPU work the way the suite reports it: CUDA events around the work alone, a
// few warm-up runs first, the L2 cache flushed before every timed run (a device buffer at least
// twice the L2 is overwritten, so no run finds its inputs cached by the run before), and the
// median, minimum and maximum of the repeated runs. A speedup is the ratio of two medians measured
// in the same process on the same GPU.
package bench

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/gpu"
)

// Method is how a measurement is taken.
type Method struct {
	Warmup  int  `json:"warmup"`
	Reps    int  `json:"reps"`
	FlushL2 bool `json:"flush_l2"`
}

// Default is the method of every recorded result: 3 warm-ups, 25 timed runs, L2 flushed before each.
var Default = Method{Warmup: 3, Reps: 25, FlushL2: true}

// Quick is for a fast look (the reproduce command's -quick, classroom runs): fewer timed runs.
var Quick = Method{Warmup: 2, Reps: 7, FlushL2: true}

// Once runs each measured kernel a single time, with no warm-up or flush: what the lab uses under
// compute-sanitizer (KERNELS_SANITIZER), which slows every launch a hundredfold and makes any timing
// meaningless, so that a timed cell or check still runs its kernels, once.
var Once = Method{Warmup: 0, Reps: 1}

// String describes the method for a receipt.
func (m Method) String() string {
	flush := "no L2 flush"
	if m.FlushL2 {
		flush = "L2 flushed before each run"
	}
	return fmt.Sprintf("CUDA events, %d warm-up, median of %d runs, %s", m.Warmup, m.Reps, flush)
}

// Timing is the result of one measurement, in milliseconds.
type Timing struct {
	Median  float64   `json:"median_ms"`
	Min     float64   `json:"min_ms"`
	Max     float64   `json:"max_ms"`
	Samples []float64 `json:"samples_ms,omitempty"`
}

// Summarize computes the median, minimum and maximum of samples (in ms).
func Summarize(samples []float64) Timing {
	if len(samples) == 0 {
		return Timing{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	s := append([]float64(nil), samples...)
	sort.Float64s(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Timing{Median: med, Min: s[0], Max: s[n-1], Samples: samples}
}

// String prints the median with its spread.
func (t Timing) String() string {
	return fmt.Sprintf("%s (min %s, max %s)", FormatMS(t.Median), FormatMS(t.Min), FormatMS(t.Max))
}

// FormatMS prints milliseconds with a unit that keeps three significant digits.
func FormatMS(ms float64) string {
	switch {
	case math.IsNaN(ms):
		return "n/a"
	case ms < 1:
		return fmt.Sprintf("%.1f µs", ms*1e3)
	case ms < 1000:
		return fmt.Sprintf("%.3g ms", ms)
	}
	return fmt.Sprintf("%.2f s", ms/1e3)
}

// Work is what a kernel must move and compute, declared by the lesson: the minimum DRAM traffic
// (each input read once, each output written once) and the useful floating-point operations.
type Work struct {
	Bytes float64 `json:"bytes"`
	FLOPs float64 `json:"flops"`
}

// Rates are a timing turned into throughputs, and into fractions of the GPU's measured copy
// bandwidth and its FP32 peak.
type Rates struct {
	GBps      float64 `json:"gbps"`
	PctBW     float64 `json:"pct_peak_bw"`
	GFLOPs    float64 `json:"gflops"`
	PctFLOPs  float64 `json:"pct_peak_flops"`
	Intensity float64 `json:"flops_per_byte"`
}

// RatesOf computes the throughputs of work done in ms milliseconds, against copyGBps (measured) and
// peakGFLOPS (from device attributes). Zero peaks give zero percentages.
func RatesOf(w Work, ms, copyGBps, peakGFLOPS float64) Rates {
	var r Rates
	if ms <= 0 || math.IsNaN(ms) {
		return r
	}
	r.GBps = w.Bytes / (ms * 1e-3) / 1e9
	r.GFLOPs = w.FLOPs / (ms * 1e-3) / 1e9
	if copyGBps > 0 {
		r.PctBW = 100 * r.GBps / copyGBps
	}
	if peakGFLOPS > 0 {
		r.PctFLOPs = 100 * r.GFLOPs / peakGFLOPS
	}
	if w.Bytes > 0 {
		r.Intensity = w.FLOPs / w.Bytes
	}
	return r
}

// Bench holds what measurements on one session share: the L2 flush buffer and the method.
type Bench struct {
	S      *gpu.Session
	Method Method
	flush  *gpu.Buffer[uint32]
}

// New prepares measurements on s with the Default method.
func New(s *gpu.Session) *Bench { return &Bench{S: s, Method: Default} }

// Close frees the flush buffer.
func (b *Bench) Close() error { return b.flush.Free() }

// FlushBytes is the size of the L2 flush buffer: twice the L2, at least 64 MiB.
func FlushBytes(d gpu.DeviceInfo) int { return max(2*d.L2Bytes, 64<<20) }

// FlushL2 overwrites a buffer twice the size of the L2, so nothing from before stays cached.
func (b *Bench) FlushL2() error {
	if b.flush == nil {
		buf, err := gpu.Alloc[uint32](b.S, FlushBytes(b.S.Device)/4)
		if err != nil {
			return fmt.Errorf("allocating the L2 flush buffer: %w", err)
		}
		b.flush = buf
	}
	return b.flush.Zero()
}

// Time measures run, which should only queue GPU work, by the Method.
func (b *Bench) Time(run func() error) (Timing, error) {
	m := b.Method
	for i := 0; i < m.Warmup; i++ {
		if err := run(); err != nil {
			return Timing{}, err
		}
	}
	if err := b.S.Synchronize(); err != nil {
		return Timing{}, fmt.Errorf("warm-up: %w", err)
	}
	samples := make([]float64, 0, m.Reps)
	for i := 0; i < m.Reps; i++ {
		if m.FlushL2 {
			if err := b.FlushL2(); err != nil {
				return Timing{}, err
			}
		}
		ms, err := b.S.Elapsed(run)
		if err != nil {
			return Timing{}, err
		}
		samples = append(samples, ms)
	}
	return Summarize(samples), nil
}

// Label is a short description of how the numbers were measured, for table captions.
func Label(m Method, device string) string {
	return strings.TrimSpace(fmt.Sprintf("%s on %s", m, device))
}

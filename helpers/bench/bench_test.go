package bench

import (
	"math"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/gpu"
)

func TestSummarize(t *testing.T) {
	got := Summarize([]float64{5, 1, 3, 2, 4})
	if got.Median != 3 || got.Min != 1 || got.Max != 5 {
		t.Errorf("odd count: %+v", got)
	}
	if got := Summarize([]float64{4, 1, 3, 2}); got.Median != 2.5 {
		t.Errorf("even count median = %v, want 2.5", got.Median)
	}
	if got := Summarize(nil); !math.IsNaN(got.Median) {
		t.Errorf("no samples: median %v, want NaN", got.Median)
	}
}

func TestRates(t *testing.T) {
	// 3 GB moved in 1 ms is 3000 GB/s; against a 3000 GB/s copy that is 100%.
	r := RatesOf(Work{Bytes: 3e9, FLOPs: 6e10}, 1, 3000, 60000)
	if math.Abs(r.GBps-3000) > 1e-9 || math.Abs(r.PctBW-100) > 1e-9 || math.Abs(r.PctFLOPs-100) > 1e-9 {
		t.Errorf("rates %+v", r)
	}
	r = RatesOf(Work{Bytes: 3e6, FLOPs: 6e7}, 1, 3000, 60000)
	if math.Abs(r.GBps-3) > 1e-9 || math.Abs(r.PctBW-0.1) > 1e-9 || math.Abs(r.GFLOPs-60) > 1e-9 ||
		math.Abs(r.PctFLOPs-0.1) > 1e-9 || r.Intensity != 20 {
		t.Errorf("rates %+v", r)
	}
	if r := RatesOf(Work{Bytes: 1}, 0, 1, 1); r.GBps != 0 {
		t.Errorf("zero time gave %+v", r)
	}
}

func TestFlushBytesCoversL2(t *testing.T) {
	h100 := gpu.DeviceInfo{L2Bytes: 50 << 20}
	if got := FlushBytes(h100); got < 2*h100.L2Bytes {
		t.Errorf("flush %d bytes for a %d-byte L2", got, h100.L2Bytes)
	}
	if got := FlushBytes(gpu.DeviceInfo{L2Bytes: 4 << 20}); got != 64<<20 {
		t.Errorf("small L2: flush %d, want the 64 MiB floor", got)
	}
}

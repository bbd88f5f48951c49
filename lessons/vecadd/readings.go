package vecadd

import (
	"github.com/cudalessons/cudalessons/helpers/lab"
)

// Readings' names of the ncu metrics the profile readings cite.
const (
	dramThroughput = "DRAM Throughput" // GPU Speed Of Light: % of the DRAM's peak
	dramRead       = "dram__bytes_read.sum"
)

// CopyReadings are the readings of section 5 (every step at TableN elements): each step's share of
// the measured copy bandwidth, and whether float4 stands above the two scalar kernels.
func CopyReadings() []lab.Reading {
	return []lab.Reading{
		{What: "naive, share of the copy bandwidth", Value: lab.BandwidthShare("add", "naive"), Format: lab.Percent},
		{What: "grid-stride, share of the copy bandwidth", Value: lab.BandwidthShare("add", "grid-stride"), Format: lab.Percent},
		{What: "float4, share of the copy bandwidth", Value: lab.BandwidthShare("add", "float4"), Format: lab.Percent},
		{What: "float4 against naive", Value: lab.Ratio("add", "naive", "float4"), Format: lab.Speedup,
			Claim: "float4 is faster than the naive kernel at this size", Holds: lab.Above(1),
			Why: "A difference within the spread of the timings (min and max in the table) is no difference: rerun the cell."},
		{What: "float4 against grid-stride", Value: lab.Ratio("add", "grid-stride", "float4"), Format: lab.Speedup,
			Claim: "float4 is faster than the grid-stride kernel at this size", Holds: lab.Above(1),
			Why: "A difference within the spread of the timings (min and max in the table) is no difference: rerun the cell."},
	}
}

// MethodReadings are the readings of section 6 (the same float4 kernel timed four ways): what a
// host clock without a sync and a single cold run report beside the method.
func MethodReadings() []lab.Reading {
	return []lab.Reading{
		{What: "host clock without a sync, implied share of the copy bandwidth", Value: lab.BandwidthShare("method", "host clock, no sync"), Format: lab.Percent,
			Claim: "a host clock around the launch alone implies an impossible bandwidth (more than the copy)", Holds: lab.Above(100)},
		{What: "one cold run's time over the method's median of float4 at the same size", Value: coldOverMedian, Format: lab.Speedup,
			Claim: "a single cold run is slower than the median of warmed-up runs", Holds: lab.Above(1)},
		{What: "L2-warm loop against the L2-flushed median on the same small input", Value: lab.Ratio("method", "L2 flushed (the method)", "L2-warm loop"), Format: lab.Speedup,
			Claim: "without the flush the small input is served from L2, so the warm loop times faster than the method", Holds: lab.Above(1)},
	}
}

// ProfileReadings cite the profiles of the naive and float4 steps (Profile; a cell shows them with
// env.ShowProfileReadings): each one's DRAM throughput as a share of the DRAM's peak, and the bytes
// each read from DRAM.
func ProfileReadings() []lab.Reading {
	return []lab.Reading{
		{What: "naive, DRAM throughput (Nsight Compute, % of the DRAM peak)", Value: lab.ProfileMetric("naive", dramThroughput), Format: lab.Percent},
		{What: "float4, DRAM throughput (Nsight Compute, % of the DRAM peak)", Value: lab.ProfileMetric("float4", dramThroughput), Format: lab.Percent},
		{What: "float4's DRAM throughput over naive's", Value: profileRatio("float4", "naive", dramThroughput), Format: lab.Speedup,
			Claim: "16-byte loads keep the DRAM busier than 4-byte loads", Holds: lab.Above(1)},
		{What: "float4's DRAM bytes read over naive's", Value: profileRatio("float4", "naive", dramRead), Format: lab.Speedup,
			Claim: "both read the same bytes (the two inputs once), within 5%", Holds: func(v float64) bool { return v > 0.95 && v < 1.05 }},
	}
}

// profileRatio is a reading's value: metric of step a over metric of step b in the figures' profiles.
func profileRatio(a, b, metric string) func(lab.Figures) (float64, bool) {
	return func(f lab.Figures) (float64, bool) {
		x, ok1 := lab.ProfileMetric(a, metric)(f)
		y, ok2 := lab.ProfileMetric(b, metric)(f)
		if !ok1 || !ok2 || y == 0 {
			return 0, false
		}
		return x / y, true
	}
}

// coldOverMedian is a reading's value: the one cold run of float4 (section 6) over float4's median
// in the step table, both at TableN.
func coldOverMedian(f lab.Figures) (float64, bool) {
	if f.Run == nil {
		return 0, false
	}
	cold, ok1 := f.Run.Find("method", "one cold run", 0)
	warm, ok2 := f.Run.Find("add", "float4", cold.Size)
	if !ok1 || !ok2 || cold.MedianMS <= 0 || warm.MedianMS <= 0 {
		return 0, false
	}
	return cold.MedianMS / warm.MedianMS, true
}

package oneflow

import (
	"strings"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// bigUpsample is the size (input elements) of the upsample readings' shape, (16,64,256,256): the
// bandwidth-bound one.
const bigUpsample = 16 * 64 * 256 * 256

// ElementwiseReadings are the readings of section 1 (z = x * y at 32M elements in both dtypes):
// each step's share of the copy bandwidth, the packs against the naive kernel and torch.mul, and
// whether bytes in flight (step 3) change anything.
func ElementwiseReadings() []lab.Reading {
	return []lab.Reading{
		{What: "float, packed: share of the copy bandwidth", Value: share("mul", "packed", F32, 0), Format: lab.Percent},
		{What: "half, naive: share of the copy bandwidth", Value: share("mul", "naive", F16, 0), Format: lab.Percent},
		{What: "half, packed: share of the copy bandwidth", Value: share("mul", "packed", F16, 0), Format: lab.Percent},
		{What: "half: packed against naive", Value: ratio("mul", "naive", "packed", F16, 0), Format: lab.Speedup,
			Claim: "in half the packs close the naive kernel's gap: packed is faster", Holds: lab.Above(1)},
		{What: "float: packed against torch.mul", Value: ratio("mul", "PyTorch torch.mul", "packed", F32, 0), Format: lab.Speedup,
			Claim: "in float the packs take the kernel level with torch.mul (within 5%)", Holds: lab.Above(0.95)},
		{What: "half: packed against torch.mul", Value: ratio("mul", "PyTorch torch.mul", "packed", F16, 0), Format: lab.Speedup},
		{What: "half: step 3 (bytes in flight, tuned) against packed", Value: ratio("mul", "packed", "packed, in flight (tuned)", F16, 0), Format: lab.Speedup,
			Claim: "more bytes in flight do not speed up the half multiply at 32M by more than 5%", Holds: lab.Below(1.05)},
		{What: "half: packed on a misaligned view (pack 1) against aligned", Value: ratio("mul", "packed", "packed, misaligned (pack 1)", F16, 0), Format: lab.Speedup},
		{What: "float: torch.compile against torch.mul", Value: ratio("mul", "PyTorch torch.mul", "torch.compile", F32, 0), Format: lab.Speedup},
	}
}

// ProfileReadings cite the profile of the packed step (Profile): how busy it keeps the DRAM, and
// whether waiting on memory (the long scoreboard) is what its warps do most.
func ProfileReadings() []lab.Reading {
	return []lab.Reading{
		{What: "packed, DRAM throughput (Nsight Compute, % of the DRAM peak)", Value: lab.ProfileMetric("packed", "DRAM Throughput"), Format: lab.Percent},
		{What: "packed, long-scoreboard stalls over its next largest stall reason", Value: longScoreboardLead, Format: lab.Speedup,
			Claim: "its warps wait on memory above all (the long scoreboard is their largest stall reason)", Holds: lab.Above(1)},
	}
}

// AtomicReadings are the readings of section 2 (one atomic per thread into one address).
func AtomicReadings() []lab.Reading {
	return []lab.Reading{
		{What: "fast specialised (half2, zero lane) against atomicAdd(half)", Value: ratio("atomics", "atomicAdd(half)", "fast specialised (half2, zero lane)", "", 0), Format: lab.Speedup,
			Claim: "a half2 atomic with a zero lane is faster than the 16-bit atomic", Holds: lab.Above(1)},
		{What: "pack 2 against fast specialised", Value: ratio("atomics", "fast specialised (half2, zero lane)", "pack 2 -> atomicAdd(half2)", "", 0), Format: lab.Speedup},
		{What: "block reduce against atomicAdd(half)", Value: ratio("atomics", "atomicAdd(half)", "block reduce, 1 float atomic/block", "", 0), Format: lab.Speedup,
			Claim: "the block reduction, one float atomic per block, is faster than any atomic per thread", Holds: lab.Above(1)},
	}
}

// UpsampleReadings are the readings of section 3 at the bandwidth-bound shape (16,64,256,256).
func UpsampleReadings() []lab.Reading {
	var rs []lab.Reading
	for _, d := range []DType{F32, F16} {
		for _, c := range []string{"upsample forward", "upsample backward"} {
			dir := strings.TrimPrefix(c, "upsample ")
			rs = append(rs, lab.Reading{What: string(d) + " " + dir + ": pack2x against generic", Value: ratio(c, "generic", "pack2x", d, bigUpsample), Format: lab.Speedup,
				Detail: func(f lab.Figures) string {
					if v, ok := share(c, "pack2x", d, bigUpsample)(f); ok {
						return "pack2x at " + show.Pct(v) + " of the copy bandwidth"
					}
					return ""
				},
				Claim: "the specialised kernel is faster than the generic one", Holds: lab.Above(1)})
		}
	}
	return rs
}

// ShowReadings is a readings cell of this notebook. On a GPU the sections measured so far by the
// cells above (saved by SectionResults) become the lesson's run kept on this GPU, so the readings
// state them and nothing is measured again; without a GPU they state the recorded run.
func ShowReadings(env *lab.Env, rs ...lab.Reading) error {
	if env.GPU() {
		run := env.NewRun(ID)
		for _, sec := range Sections {
			path, err := sectionPath(sec)
			if err != nil {
				continue
			}
			if part, err := record.Load(path); err == nil && part.Receipt.Device.Name == env.Receipt.Device.Name {
				run.Merge(part)
			}
		}
		if len(run.Records) == 0 {
			show.Note(show.Info, "No section of this lesson has been measured on this GPU yet: run the cells above first.")
			return nil
		}
		if err := env.Keep(run); err != nil {
			return err
		}
	}
	return env.ShowReadings(Lesson, rs...)
}

// recordOf is find on the figures' run: the record of case c and variant v with dtype d and size n
// (either zero: any).
func recordOf(f lab.Figures, c, v string, d DType, n int64) (record.Record, bool) {
	if f.Run == nil {
		return record.Record{}, false
	}
	return find(f.Run, c, v, d, n)
}

// ratio is a reading's value: the median of base over that of variant (case c, dtype d, size n).
func ratio(c, base, variant string, d DType, n int64) func(lab.Figures) (float64, bool) {
	return func(f lab.Figures) (float64, bool) {
		b, ok1 := recordOf(f, c, base, d, n)
		v, ok2 := recordOf(f, c, variant, d, n)
		if !ok1 || !ok2 || b.MedianMS <= 0 || v.MedianMS <= 0 {
			return 0, false
		}
		return b.MedianMS / v.MedianMS, true
	}
}

// share is a reading's value: the share (%) of the copy bandwidth of variant (case c, dtype d, size n).
func share(c, variant string, d DType, n int64) func(lab.Figures) (float64, bool) {
	return func(f lab.Figures) (float64, bool) {
		r, ok := recordOf(f, c, variant, d, n)
		return r.PctBW, ok && r.PctBW > 0
	}
}

// longScoreboardLead is the packed step's long-scoreboard stall over its largest other stall reason
// (nsight's Stalls; "selected", a warp issuing, is not a stall).
func longScoreboardLead(f lab.Figures) (float64, bool) {
	if f.Profiles == nil {
		return 0, false
	}
	for _, p := range f.Profiles.Profiles {
		if strings.TrimPrefix(p.Step, "the original ") != "packed" {
			continue
		}
		long, other := 0.0, 0.0
		for _, st := range p.Kernel.Stalls() {
			switch st.Reason {
			case "long scoreboard":
				long = st.PerIssue
			case "selected":
			default:
				other = max(other, st.PerIssue)
			}
		}
		if long <= 0 || other <= 0 {
			return 0, false
		}
		return long / other, true
	}
	return 0, false
}

package record

import (
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/gpu"
)

// Peak is the compute ceiling a record's FLOP rate is measured against. A step on the CUDA cores
// (float32, and half or bfloat16 storage with float arithmetic) is against the receipt's FP32 peak
// (SMs x FMA lanes x 2 x clock); a tensor-core step (a dtype that gpu.TensorFormat maps to "tf32",
// "fp16" or "bf16") is against the datasheet tensor-core peak of its format on the receipt's GPU
// (gpu.ProfileOf), which is several times higher. A split format (3xtf32, fp16x3, bf16x3) runs
// three tensor-core products for every useful one, so its ceiling is a third of that peak.
type Peak struct {
	Format  string  // "" for the FP32 peak; "tf32", "fp16" or "bf16" for a tensor-core peak
	GFLOPS  float64 // the peak; 0 when it is not known (Missing says why)
	Split   bool    // three products per useful one: the step's ceiling is a third of GFLOPS
	Missing string  // why there is no figure, e.g. "NVIDIA T4 has no TF32 tensor cores"
}

// Tensor reports whether the peak is a tensor-core one.
func (p Peak) Tensor() bool { return p.Format != "" }

// Name says which peak it is: "FP32 peak" or "TF32 tensor peak (datasheet)".
func (p Peak) Name() string {
	if p.Format == "" {
		return "FP32 peak"
	}
	return strings.ToUpper(p.Format) + " tensor peak (datasheet)"
}

// Label is Name, for a split with its ceiling: "FP16 tensor peak (datasheet; a split's ceiling: 33%)".
func (p Peak) Label() string {
	if !p.Split {
		return p.Name()
	}
	return strings.ToUpper(p.Format) + " tensor peak (datasheet; a split's ceiling: 33%)"
}

// Pct is a rate in GFLOP/s as a percentage of the peak; ok is false when the peak is not known.
func (p Peak) Pct(gflops float64) (pct float64, ok bool) {
	if p.GFLOPS <= 0 {
		return 0, false
	}
	return 100 * gflops / p.GFLOPS, true
}

// PeakFor is the ceiling of a step of dtype on the receipt's GPU: the FP32 peak of the receipt for
// the CUDA cores' dtypes, the datasheet peak of the matching tensor cores otherwise. A GPU that is
// not among gpu.Profiles, or has no tensor cores of the format, gives a Peak with no figure and
// the reason in Missing, never the FP32 peak in its place.
func (r Receipt) PeakFor(dtype string) Peak {
	f := gpu.TensorFormat(dtype)
	if f == "" {
		p := Peak{GFLOPS: r.PeakGFLOPS}
		if p.GFLOPS <= 0 {
			p.Missing = "the receipt has no FP32 peak"
		}
		return p
	}
	p := Peak{Format: f, Split: splitFormat(dtype)}
	prof, ok := gpu.ProfileOf(r.Device)
	switch {
	case !ok:
		name := r.Device.Hardware().Name
		if name == "" {
			name = "this GPU"
		}
		p.Missing = fmt.Sprintf("no datasheet %s tensor peak for %s (not among the GPU profiles)", strings.ToUpper(f), name)
	case prof.TensorPeakTFLOPS(f) <= 0:
		p.Missing = fmt.Sprintf("%s has no %s tensor cores", prof.Name, strings.ToUpper(f))
	default:
		p.GFLOPS = 1e3 * prof.TensorPeakTFLOPS(f)
	}
	return p
}

// splitFormat reports whether a tensor-core dtype is a split: each float32 input as a hi and a lo
// part, three products per useful one ("3xtf32", "fp16x3", "bf16x3").
func splitFormat(dtype string) bool {
	d := strings.ToLower(dtype)
	return strings.HasPrefix(d, "3x") || strings.HasSuffix(d, "x3")
}

// FLOPShare is a record's FLOP rate as a percentage of the ceiling of its dtype on the receipt's GPU
// (PeakFor), recomputed from its GFLOP/s: receipts written before tensor-core peaks existed hold
// every record's share of the FP32 peak, and show right through this. ok is false when the record
// did no counted FLOPs or the peak is not known.
func (r Receipt) FLOPShare(rec Record) (pct float64, peak Peak, ok bool) {
	peak = r.PeakFor(rec.DType)
	if rec.GFLOPs <= 0 {
		return 0, peak, false
	}
	pct, ok = peak.Pct(rec.GFLOPs)
	return pct, peak, ok
}

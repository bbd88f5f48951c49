package show

import (
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// PeakShare is a record's FLOP rate as a share of the ceiling of its dtype (record.Receipt.FLOPShare),
// naming the ceiling: "51.3% of FP32 peak", "31.0% of TF32 tensor peak (datasheet)"; "n/a" for a
// record with no counted FLOPs, and "n/a: " and the reason when the GPU's tensor peak is not known.
func PeakShare(receipt record.Receipt, r record.Record) string {
	pct, peak, ok := receipt.FLOPShare(r)
	switch {
	case ok:
		return Pct(pct) + " of " + peak.Label()
	case r.GFLOPs > 0 && peak.Missing != "":
		return "n/a: " + peak.Missing
	}
	return "n/a"
}

// PeakColumn is a table's FLOP-share column for recs: when every record runs on the CUDA cores, the
// header "% FP32 peak" and bare percentages; when some run on tensor cores, the header "% of peak"
// and cells that name their peak (PeakShare).
func PeakColumn(receipt record.Receipt, recs []record.Record) (header string, cell func(record.Record) string) {
	for _, r := range recs {
		if receipt.PeakFor(r.DType).Tensor() {
			return "% of peak", func(r record.Record) string { return PeakShare(receipt, r) }
		}
	}
	return "% FP32 peak", func(r record.Record) string {
		pct, _, _ := receipt.FLOPShare(r)
		return Pct(pct)
	}
}

// PeakNote is a caption's sentence on the peaks of recs' tensor-core records: which datasheet
// figures they are against, and that a split's ceiling is a third of its format's; "" when every
// record runs on the CUDA cores.
func PeakNote(receipt record.Receipt, recs []record.Record) string {
	var formats, missing []string
	split := false
	seen := map[string]bool{}
	for _, r := range recs {
		p := receipt.PeakFor(r.DType)
		if !p.Tensor() {
			continue
		}
		split = split || p.Split
		if seen[p.Format] {
			continue
		}
		seen[p.Format] = true
		if p.Missing != "" {
			missing = append(missing, p.Missing)
			continue
		}
		formats = append(formats, fmt.Sprintf("%s %.1f", strings.ToUpper(p.Format), p.GFLOPS/1e3))
	}
	if len(seen) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Tensor-core steps are shares of the datasheet tensor-core peak of their input format")
	if prof, ok := gpu.ProfileOf(receipt.Device); ok && len(formats) > 0 {
		fmt.Fprintf(&b, " on the %s (%s TFLOP/s, dense, float32 accumulation)", prof.Name, strings.Join(formats, ", "))
	}
	fmt.Fprintf(&b, ", CUDA-core steps of the FP32 peak (%.1f TFLOP/s).", receipt.PeakFP32())
	if split {
		b.WriteString(" A split (3xTF32, fp16x3, bf16x3) does three tensor-core products per useful one: its ceiling is a third of its format's peak, 33%.")
	}
	if len(missing) > 0 {
		b.WriteString(" Not known here: " + strings.Join(missing, "; ") + ".")
	}
	return b.String()
}

// Sentences joins a caption's parts with single spaces, leaving out the empty ones (a PeakNote of a
// table with no tensor-core step).
func Sentences(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

// ShareFloor is the share of its ceiling, in percent, under which a step's share is not a useful
// figure: a kernel that uses less than 1% of both the copy bandwidth and the peak of its format is
// bound by launches, latency or serialisation, and its time says more than a "0.0%".
const ShareFloor = 1.0

// StepShare is the share of the GPU a record uses against its own ceiling, and which ceiling: the
// larger of its share of the measured copy bandwidth and of the peak of its dtype
// (record.Receipt.FLOPShare: the FP32 peak on the CUDA cores, the datasheet tensor-core peak of its
// format for a tensor-core step, recomputed from its GFLOP/s, so receipts written before tensor
// peaks show right). ok is false below ShareFloor of both, and for a tensor-core step on a GPU whose
// tensor peak is not known: resource then says why ("n/a: ...").
func StepShare(receipt record.Receipt, r record.Record) (pct float64, resource string, ok bool) {
	pct, resource = r.PctBW, "copy BW"
	fp, peak, known := receipt.FLOPShare(r)
	switch {
	case known && fp > pct:
		pct, resource = fp, peak.Label()
	case !known && peak.Tensor() && r.GFLOPs > 0:
		return 0, "n/a: " + peak.Missing, false
	}
	return pct, resource, pct >= ShareFloor
}

// ShareCell is a table's cell for StepShare: "92.4% of copy BW", "31.0% of TF32 tensor peak
// (datasheet)"; "—" below ShareFloor of every ceiling (ShareNote says why); "n/a" for a record with
// no rate, and "n/a: " and the reason when the GPU's tensor peak is not known.
func ShareCell(receipt record.Receipt, r record.Record) string {
	pct, resource, ok := StepShare(receipt, r)
	switch {
	case ok:
		return Pct(pct) + " of " + resource
	case strings.HasPrefix(resource, "n/a"):
		return resource
	case r.MedianMS <= 0 || r.GBps <= 0 && r.GFLOPs <= 0:
		return "n/a"
	}
	return "—"
}

// ShareNote is a caption's sentence on the "—" share cells of recs (ShareCell): why they have no
// share; "" when none has.
func ShareNote(receipt record.Receipt, recs []record.Record) string {
	for _, r := range recs {
		if ShareCell(receipt, r) == "—" {
			return fmt.Sprintf("A share of \"—\" is under %g%% of both the copy bandwidth and the peak of the step's format: such a kernel is bound by launches, latency or serialisation, not by a ceiling of the GPU, and its time is the figure to read.", ShareFloor)
		}
	}
	return ""
}

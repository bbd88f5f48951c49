package compare

import (
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/kernelbench"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// KernelBenchMarkdown is the receipt of every machine's KernelBench run, one table of every
// problem's kernels (times on each machine, the recorded run's two verdicts) and each machine's
// fast_p (kernelbench.FastPShow).
func KernelBenchMarkdown(runs []KernelBenchRun) string {
	if len(runs) == 0 {
		return "No KernelBench run is recorded."
	}
	var b strings.Builder
	for i, r := range runs {
		b.WriteString(kernelBenchReceipt(i, r) + "\n\n")
	}
	first := runs[0].Report
	t := show.Table{Header: []string{"problem", "our kernel", kbColumn(0, runs[0]) + ": ours · eager · torch.compile", "KernelBench's check", "float64 check (worst rel L2)"}}
	for i, r := range runs[1:] {
		t.Header = append(t.Header, kbColumn(i+1, r)+": ours · eager · torch.compile")
	}
	for _, res := range first.Results {
		name := res.ID + " " + res.Problem.Title + ", " + res.Shape
		if !res.Ran() {
			row := []string{name, "did not run", "—", "—", "—"}
			for range runs[1:] {
				row = append(row, "—")
			}
			t.Rows = append(t.Rows, row)
			continue
		}
		for _, v := range res.Variants {
			row := []string{name, v.Variant.Name + " (" + v.Variant.DType + ")", kbTimes(res, v), kbVerdict(v.KB), v.Float64.Counts()}
			for _, other := range runs[1:] {
				row = append(row, otherTimes(other.Report, res.ID, v.Variant))
			}
			t.Rows = append(t.Rows, row)
		}
	}
	b.WriteString(t.Markdown())
	for i, r := range runs {
		f := kernelbench.FastPShow(r.Report)
		f.Title = kbColumn(i, r) + ", " + f.Title
		f.Caption = ""
		b.WriteString("\n" + f.Markdown())
	}
	b.WriteString("\n" + kernelbench.FastPShow(first).Caption + "\n")
	return b.String()
}

// kbColumn names a machine's KernelBench run: the recorded run first, then the second machine.
func kbColumn(i int, r KernelBenchRun) string {
	who := "recorded run"
	if i > 0 {
		who = "second machine"
	}
	return who + ": " + r.Report.Receipt.Device.Name + " (" + r.Folder + ")"
}

// kernelBenchReceipt says where and how a KernelBench run was measured, from its receipt.
func kernelBenchReceipt(i int, r KernelBenchRun) string {
	rec := r.Report.Receipt
	who := "The recorded run"
	if i > 0 {
		who = "The second machine"
	}
	s := fmt.Sprintf("%s (`%skernelbench.json`): %s, driver %s (CUDA %s), NVRTC %s, PyTorch %s, %s", who, r.Folder, rec.Device.Name,
		rec.DriverRelease, rec.CUDADriver, rec.NVRTC, shortTorch(rec.Torch), strings.TrimSuffix(strings.Replace(rec.Date, "T", " ", 1), "Z")+" UTC")
	if r.Report.Commit != "" {
		s += ", commit " + r.Report.Commit
	}
	src := r.Report.KernelBench.Commit
	if len(src) > 7 {
		src = src[:7]
	}
	return s + fmt.Sprintf("; %d problems, %d trials each; KernelBench's problems read at its commit %s.", len(r.Report.Results), r.Report.Trials, src)
}

// kbTimes is "ours · eager · torch.compile" of variant v of problem res.
func kbTimes(res kernelbench.Result, v kernelbench.VariantResult) string {
	return show.MS(v.Timing.MedianMS) + " · " + show.MS(msOf(res.Eager)) + " · " + show.MS(msOf(res.Compile))
}

// otherTimes is kbTimes on another run: the same problem's variant of the same name, else of the
// same dtype; "—" when that run lacks it.
func otherTimes(rep kernelbench.Report, id string, want kernelbench.Variant) string {
	for _, res := range rep.Results {
		if res.ID != id || !res.Ran() {
			continue
		}
		for _, byName := range []bool{true, false} {
			for _, v := range res.Variants {
				if (byName && v.Variant.Name == want.Name) || (!byName && v.Variant.DType == want.DType) {
					return kbTimes(res, v)
				}
			}
		}
	}
	return "—"
}

// kbVerdict is KernelBench's verdict: the trials that passed.
func kbVerdict(k kernelbench.KBVerdict) string {
	if !k.Available {
		return "n/a"
	}
	s := fmt.Sprintf("%d/%d", k.Passed, k.Trials)
	if !k.Correct {
		s += " (incorrect)"
	}
	return s
}

// msOf is a baseline's median, 0 (shown as n/a) when it was not measured.
func msOf(t *bench.Timing) float64 {
	if t == nil {
		return 0
	}
	return t.Median
}

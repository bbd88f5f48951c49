package oneflow

import "github.com/cudalessons/cudalessons/helpers/record"

// The cross-GPU comparison (lessons/compare) shows the elementwise steps, the atomics and the
// upsample, beside the article's A100 numbers.
func init() {
	Lesson.Compare = []string{"mul", "atomics", "upsample forward", "upsample backward"}
	Lesson.Article = ArticleRecords
}

// ArticleDevice names the article's GPU in the comparison.
const ArticleDevice = "A100 PCIe 40GB (article)"

// ArticleRecords is the article's tables as records on its A100: times, and its bandwidth
// utilisation (of the 1555 GB/s datasheet peak for the elementwise, ncu's DRAM counter for the
// upsample) in PctBW.
func ArticleRecords() []record.Record {
	var out []record.Record
	rec := func(caseName, variant string, d DType, shape string, size int64, us, pct float64, note string) {
		ms := us / 1e3
		out = append(out, record.Record{Lesson: ID, Case: caseName, Variant: variant, Kind: "article", DType: string(d), Shape: shape, Size: size,
			MedianMS: ms, MinMS: ms, MaxMS: ms, PctBW: pct, Device: ArticleDevice, Note: note})
	}
	for _, a := range ArticleMul {
		rec("mul", a.Step, a.DType, "n=33554432", MulN, a.TimeUS, a.PctBW, "% of the 1555 GB/s datasheet peak")
	}
	for _, s := range AtomicSteps {
		if ms, ok := ArticleAtomics[s.Name]; ok {
			out = append(out, record.Record{Lesson: ID, Case: "atomics", Variant: s.Name, Kind: "article", DType: "float16 (half accumulator)", Size: DotN,
				MedianMS: ms, MinMS: ms, MaxMS: ms, Device: ArticleDevice, Note: "inputs not pinned in the article"})
		}
	}
	in := int64(ArticleShape[0] * ArticleShape[1] * ArticleShape[2] * ArticleShape[3])
	for _, a := range ArticleUpsample {
		v := "pack2x"
		if a.Framework == "PyTorch" {
			v = "PyTorch"
		}
		rec("upsample "+a.Dir, v, a.DType, fmtShape(ArticleShape), in, a.TimeUS, a.PctBW, "% is ncu's DRAM utilisation")
	}
	return out
}

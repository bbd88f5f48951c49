package conv

import "github.com/cudalessons/cudalessons/helpers/record"

// The cross-GPU comparison (lessons/compare) shows the conv ladder at AlexNet's first layer, the
// fused layer and the deep layer, beside the article's conv figures (its PyTorch reference and its
// final kernel on an L40S; for the fused layer it gives only ratios, so no article records).
func init() {
	Lesson.Compare = []string{CaseAlexNet, CaseFused, CaseDeep}
	Lesson.Article = ArticleRecords
}

// ArticleDevice names the article's GPU in the comparison.
const ArticleDevice = "L40S (article)"

// ArticleRecords is the article's conv as records: PyTorch's conv (1.41 ms) and its final
// generated FP16 kernel (0.795 ms, round 13), means of 100 runs.
func ArticleRecords() []record.Record {
	add := func(variant, dtype string, ms float64) record.Record {
		return record.Record{Lesson: ID, Case: CaseAlexNet, Variant: variant, Kind: "article", DType: dtype, Shape: AlexNet.Short(),
			MedianMS: ms, MinMS: ms, MaxMS: ms, Device: ArticleDevice, Note: "KernelBench: mean of 100 timed runs after 3 warm-ups"}
	}
	return []record.Record{add(CuDNN, F32, Article.ConvRefMS), add("article's round 13 (FP16 WMMA)", FP16, Article.ConvMS)}
}

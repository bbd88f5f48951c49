package giou

import "github.com/cudalessons/cudalessons/helpers/record"

// The cross-GPU comparison (lessons/compare) shows the loss and the loss with its gradient at the
// article's workload, beside the article's own timings.
func init() {
	Lesson.Compare = []string{string(KindForward), string(KindTrain)}
	Lesson.Article = ArticleRecords
}

// ArticleDevice names the article's GPU in the comparison.
const ArticleDevice = "NVIDIA L4 (article)"

// ArticleRecords is the article's table as records: the profiler's CPU time per step for its five
// variants (one number each, the mean of 10 steps).
func ArticleRecords() []record.Record {
	s := ArticleShape
	var out []record.Record
	for _, a := range ArticleVariants {
		out = append(out, record.Record{Lesson: ID, Case: string(KindForward), Variant: a.Variant, Kind: "article", DType: "float32", Shape: s.String(),
			Size: int64(s.B), MedianMS: a.MS, MinMS: a.MS, MaxMS: a.MS, Device: ArticleDevice,
			Note: "PyTorch profiler CPU total of 'calc loss' over 10 steps / 10 (the kernel rows include the float32 casts and torch's reductions)"})
	}
	return out
}

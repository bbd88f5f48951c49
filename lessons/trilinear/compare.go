package trilinear

import "github.com/cudalessons/cudalessons/helpers/record"

// The cross-GPU comparison (lessons/compare) shows the forward, the feats backward and the fused
// training step at the article's shape, beside the article's own timings.
func init() {
	Lesson.Compare = []string{string(KindForward), string(KindBwdFeats), string(KindTrain)}
	Lesson.Article = ArticleRecords
}

// ArticleDevice names the article's GPU in the comparison: a compute_86 (Ampere consumer) card.
const ArticleDevice = "compute_86 GPU (article)"

// ArticleRecords is the article's table as records: its CUDA kernel and PyTorch, forward and
// backward, each ONE wall-clock sample with no warm-up. The article's backward is timed alone for
// its kernel and through autograd for PyTorch; both are set beside the feats backward here.
func ArticleRecords() []record.Record {
	s := ArticleShape
	add := func(caseName, variant string, ms float64) record.Record {
		return record.Record{Lesson: ID, Case: caseName, Variant: variant, Kind: "article", DType: "float32", Shape: s.String(), Size: int64(s.N),
			MedianMS: ms, MinMS: ms, MaxMS: ms, Device: ArticleDevice, Note: "one wall-clock sample, no warm-up (kwea123's tutorial)"}
	}
	return []record.Record{
		add(string(KindForward), Steps[0].Name, Article.CUDAFwd),
		add(string(KindForward), Eager, Article.TorchFwd),
		add(string(KindBwdFeats), "5 backward feats", Article.CUDABwd),
		add(string(KindBwdFeats), Eager+" backward", Article.TorchBwd),
	}
}

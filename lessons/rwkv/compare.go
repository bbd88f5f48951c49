package rwkv

import "github.com/cudalessons/cudalessons/helpers/record"

// The cross-GPU comparison (lessons/compare) shows the forward and backward ladders at the
// article's shape, beside the article's own GTX 1070M and RTX 3090 numbers.
func init() {
	Lesson.Compare = []string{"forward", "backward"}
	Lesson.Article = ArticleRecords
}

// ArticleRecords is the article's table as records: one per step and direction on the GTX 1070M,
// and PyTorch and v3 on the RTX 3090 (each ONE profiled iteration).
func ArticleRecords() []record.Record {
	var out []record.Record
	s := ArticleShape
	add := func(device, caseName, variant string, ms float64) {
		if ms > 0 {
			out = append(out, record.Record{Lesson: ID, Case: caseName, Variant: variant, Kind: "article", DType: "float32", Shape: s.String(), Size: int64(s.T),
				MedianMS: ms, MinMS: ms, MaxMS: ms, Device: device, Note: "one profiled iteration (BlinkDL, RWKV-CUDA)"})
		}
	}
	bwd := func(step string) string {
		if step == Torch {
			return Torch
		}
		return "bwd " + step
	}
	for _, a := range Article {
		add("GTX 1070M (article)", "forward", a.Step, a.Fwd)
		add("GTX 1070M (article)", "backward", bwd(a.Step), a.Bwd)
	}
	for _, a := range Article3090 {
		add("RTX 3090 (article)", "forward", a.Step, a.Fwd)
		add("RTX 3090 (article)", "backward", bwd(a.Step), a.Bwd)
	}
	return out
}

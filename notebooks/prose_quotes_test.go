package notebooks

// A quote is a figure the notebooks may type: an article's published number or a datasheet fact,
// not a measurement of this suite's run. It is allowed only in a sentence that holds its context
// phrase, so the same number typed elsewhere as a measurement is still caught.
type quote struct {
	Figure  string // as the scan reports it: "45 ms", "101.3%", "3.35 TB/s"
	Context string // a phrase of the sentence that quotes it (case folded)
	Source  string // where the figure is published
}

// Sources of the quotes below.
const (
	rwkvArticle    = "BlinkDL, RWKV-CUDA (https://zhuanlan.zhihu.com/p/476297195), GTX1070M and RTX 3090 tables"
	oneflowArticle = "BBuf, OneFlow elementwise / FastAtomicAdd / UpsampleNearest2D (https://github.com/BBuf/how-to-optim-algorithm-in-cuda), A100 PCIe tables"
	crfmArticle    = "Stanford CRFM, Surprisingly Fast AI-Generated Kernels (https://crfm.stanford.edu/2025/05/28/fast-kernels.html), L40S"
	giouArticle    = "Chaim Rand, Accelerating AI/ML Model Training with Custom Operators (https://towardsdatascience.com/accelerating-ai-ml-model-training-with-custom-operators-163ef2a04b12), L4"
	trilinearTutor = "kwea123, pytorch-cppcuda-tutorial (https://github.com/kwea123/pytorch-cppcuda-tutorial), compute_86 GPU"
	h100Datasheet  = "NVIDIA H100 Tensor Core GPU datasheet (SXM5)"
	a100Datasheet  = "NVIDIA A100 datasheet (PCIe 40GB)"
)

// quotes is the list the prose scan allows: each an article's published figure or a datasheet fact.
var quotes = []quote{
	// Lesson 01: the RWKV article's GTX 1070M table (forward times) and its headline speedup.
	{"27x", "article", rwkvArticle},
	{"45 to 17 ms", "GTX 1070M", rwkvArticle + ": v0 45 ms, v1 17 ms forward"},
	{"13-14 ms", "GTX 1070M", rwkvArticle + ": v2 forward"},
	{"3.4 ms", "GTX 1070M", rwkvArticle + ": v3 forward"},

	// Lesson 02: the A100's peak the article divides by, its half naive utilisation, and the H100's HBM3 bandwidth.
	{"1555 GB/s", "A100", a100Datasheet + ", as quoted by " + oneflowArticle},
	{"52.6%", "article measures", oneflowArticle + ": naive half, 52.55% bandwidth utilisation"},
	{"3.35 TB/s", "datasheet", h100Datasheet + ": HBM3 memory bandwidth"},

	// Lesson 03: the article's matmul result, and the H100's FP32 peak.
	{"101.3%", "article reports", crfmArticle + ": Matmul 4096x4096"},
	{"67 TFLOP/s", "datasheet", h100Datasheet + ": FP32 67 TFLOPS"},

	// Lesson 04: the article's softmax (111.8%) and layer norm (484.4%) over eager, as ratios.
	{"1.12x", "L40S", crfmArticle + ": Softmax 111.8%"},
	{"4.8x", "L40S", crfmArticle + ": LayerNorm 484.4%"},

	// Lesson 05: the article's conv and fused conv + ReLU + max pool.
	{"179.9%", "KernelBench article", crfmArticle + ": Conv2D"},
	{"290.1%", "KernelBench article", crfmArticle + ": Conv2D+ReLU+MaxPool against eager"},
	{"189.0%", "KernelBench article", crfmArticle + ": Conv2D+ReLU+MaxPool against torch.compile"},

	// Lesson 06: the article's "calc loss" times and its host-to-device copies, on an L4.
	{"628.743 µs", "article saw", giouArticle + ": fused kernel"},
	{"623.426 µs", "article saw", giouArticle + ": fused kernel with conditional skip"},
	{"938.067 ms", "article's three variants", giouArticle + ": per-sample loop"},
	{"25.405 ms", "article's three variants", giouArticle + ": concatenated valid boxes"},
	{"1.844 ms", "article's three variants", giouArticle + ": padded with a mask"},
	{"28.8 ms", "article measured", giouArticle + ": ragged host-to-device copy per step"},
	{"5.7 ms", "article measured", giouArticle + ": padded host-to-device copy per step"},

	// Lesson 07: the tutorial's one-shot timings.
	{"3.31 ms", "compute_86", trilinearTutor + ": forward, CUDA"},
	{"4.14 ms", "compute_86", trilinearTutor + ": forward, PyTorch"},
	{"4.65 ms", "compute_86", trilinearTutor + ": backward, CUDA"},
	{"46.1 ms", "compute_86", trilinearTutor + ": backward, PyTorch"},

	// Lesson 08: the H100's dense fp16 tensor-core peak.
	{"989 TFLOP/s", "datasheet", h100Datasheet + ": FP16 tensor core 989 TFLOPS dense"},
}

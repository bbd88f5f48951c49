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
	rwkvArticle     = "BlinkDL, RWKV-CUDA (https://zhuanlan.zhihu.com/p/476297195), GTX1070M and RTX 3090 tables"
	oneflowArticle  = "BBuf, OneFlow elementwise / FastAtomicAdd / UpsampleNearest2D (https://github.com/BBuf/how-to-optim-algorithm-in-cuda), A100 PCIe tables"
	crfmArticle     = "Stanford CRFM, Surprisingly Fast AI-Generated Kernels (https://crfm.stanford.edu/2025/05/28/fast-kernels.html), L40S"
	giouArticle     = "Chaim Rand, Accelerating AI/ML Model Training with Custom Operators (https://towardsdatascience.com/accelerating-ai-ml-model-training-with-custom-operators-163ef2a04b12), L4"
	trilinearTutor  = "kwea123, pytorch-cppcuda-tutorial (https://github.com/kwea123/pytorch-cppcuda-tutorial), compute_86 GPU"
	h100Datasheet   = "NVIDIA H100 Tensor Core GPU datasheet (SXM5)"
	a100Datasheet   = "NVIDIA A100 datasheet (PCIe 40GB)"
	hopperWorklog   = "Pranjal Shankhdhar, Outperforming cuBLAS on H100: a Worklog (https://cudaforfun.substack.com/p/outperforming-cublas-on-h100-a-worklog)"
	sgemmWorklog    = "Simon Boehm, How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance (https://siboehm.com/articles/22/CUDA-MMM)"
	kernelBenchRule = "KernelBench (https://github.com/ScalingIntelligence/KernelBench): speedups over 10x flagged as suspicious"
)

// quotes is the list the prose scan allows.
var quotes = []quote{}

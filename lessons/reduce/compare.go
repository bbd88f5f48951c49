package reduce

// The cross-GPU comparison (lessons/compare) shows softmax (long and short rows, 16-bit) and layer
// norm forward and backward at the article's shapes. The article gives no absolute times (only
// PyTorch's time over the kernel's on an L40S), so no article records stand beside them.
func init() {
	Lesson.Compare = []string{"softmax", "softmax short rows", "softmax 16-bit", "layernorm", "layernorm backward"}
}

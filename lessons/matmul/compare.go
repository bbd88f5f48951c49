package matmul

// The cross-GPU comparison (lessons/compare) shows the ladder and cuBLAS at 4096^3. The article
// gives no absolute times (only PyTorch's time over the kernel's, 101.3% on an L40S), so no
// article records stand beside it.
func init() { Lesson.Compare = []string{"matmul"} }

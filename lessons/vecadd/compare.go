package vecadd

// The cross-GPU comparison (lessons/compare) shows the three steps and the copy at TableN.
func init() { Lesson.Compare = []string{"add"} }

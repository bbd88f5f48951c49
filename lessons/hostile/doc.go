// Package hostile feeds every public op of every lesson the inputs models produce, and judges each
// output against the float64 reference and PyTorch's own op on the same input.
//
// The catalogue (Catalogue) lists each op a reader calls on their own tensors: the autograd ops
// forward and backward, and the plain entry points such as matmul.Multiply. For each op it names the
// paths its dispatch takes (the lesson's steps) and the shapes where the dispatch changes path, so
// that a run exercises every path. The distributions (Dists) are those of real activations and
// masks: normal and uniform values at scales from 1e-30 to 1e30, scales mixed across rows, constant
// rows, rows masked with -inf, +-inf and NaN entries, float32 denormals, rows of one element and
// rows long enough for an op's longest path, and views off 16-byte alignment where an op takes a
// device buffer.
//
// Every case (op, distribution, shape) ends in one of three verdicts:
//   - pass: every output is within the lesson's own tolerance of the float64 reference, judged row
//     by row relative to the row's size and with the floor its own magnitudes give (so that 1e-30
//     and 1e30 are held to the same bound), and has PyTorch's non-finite values: NaN where the
//     input makes the answer NaN (a NaN, inf - inf, a softmax row all -inf), as PyTorch's op gives
//     (Judge says how an overflow inside PyTorch's arithmetic is taken);
//   - refused: the op returned an error naming the reason before giving any output;
//   - fail: what differs, and where.
//
// Run runs the catalogue on a GPU and returns a Report (results/hostile.json through cmd/hostile);
// Report.Check is what the suite's tests require of a recorded run.
//
//	env, _ := lab.Open()
//	rep, err := hostile.Run(env, hostile.Options{Seed: 1})
//	for _, l := range rep.Summary() { fmt.Println(l) }
package hostile

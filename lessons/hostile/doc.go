// Package hostile feeds every public op of every lesson the inputs models produce, and judges each
// output against the float64 reference and PyTorch's own op on the same input.
//
// The catalogue (Catalogue) lists each op a reader calls on their own tensors: the autograd ops
// forward and backward, and the plain entry points such as matmul.Multiply. For each op it names the
// paths its dispatch takes (the lesson's steps) and the shapes where the dispatch changes path, so
// that a run exercises every path. The distributions (Dists) are those of real activations and
// masks: normal and uniform values at scales from 1e-30 to 1e30, scales mixed across rows, rows
// whose entries span 2^-20 to 2^20, constant rows, rows masked with -inf, +-inf and NaN entries,
// float32 denormals, rows of one element and rows long enough for an op's longest path, and views
// off 16-byte alignment where an op takes a device buffer.
//
// Every case (op, distribution, shape) ends in one of three verdicts:
//   - pass: every output satisfies the rules below;
//   - refused: the op returned an error naming the reason before giving any output;
//   - fail: what differs, and where.
//
// The rules. The reference is the float64 evaluation of the op's formula, the same formula PyTorch
// uses, so that its non-finite values are PyTorch's semantics (a NaN in gives NaN, inf - inf and
// 0 x inf give NaN, a softmax row all -inf is NaN, one with a finite element is exact); exact32 is
// the reference rounded to float32 (beyond float32's largest, +-inf).
//   - Where the reference is NaN, the op must give NaN; where it is +-inf, that infinity.
//   - Where the reference is finite but exact32 is +-inf (the true answer overflows float32), the
//     op must give a non-finite value: the infinity of that sign, NaN, or the other infinity where the
//     terms' absolute sum passes float32's largest (an accumulation keeps the sign of its first
//     term past the range). A finite value there is wrong.
//   - Where exact32 is finite, an output that sums terms (Output.Bound: the products of both
//     Multiplys and the matmul ops, the conv, the RWKV time-mix forward and dw and dk, trilinear's
//     dfeats) must be within each element's bound of the reference: the rounding model's worst
//     case with lesson 03's constant (matmul.ElementBound: one rounding per addition, and the
//     inputs' rounding on tensor cores) times the sum of the absolute values of the element's terms
//     (the reference on the absolute values of the inputs, |A||B| for a product; Output.Mag), plus
//     check.Eta32 per product for subnormals. Where that sum itself passes float32's largest, a
//     partial sum can overflow in some order, and a non-finite value is accepted there too
//     (check.JudgeElement). The other outputs (the softmax and layer norm families, the elementwise
//     ops, GIoU, trilinear's forward and dpoints) keep the lesson's derived tolerance, judged row
//     by row relative to the row's size, with the floor its own magnitudes give (so that 1e-30 and
//     1e30 are held to the same bound), and must be finite there.
//   - PyTorch's output on the same input is judged by the same rules and recorded beside the op's
//     (Judged.Torch, Row.Torch: "pass", or "differs: " and what), never failing it; where PyTorch is
//     unavailable, the column says why. PyTorch's NaN where the reference is finite (0 x inf in a
//     zero-padded formulation, an overflow inside its float32 arithmetic) asks nothing of the op.
//
// Nothing is loosened beyond the rounding model: the element bound is the worst case of the model
// the lessons' own checks use (lesson 03's CompareBound; for dfeats, the float32 operations of the
// kernels' corner weight, counted in featsRoundings).
//
// Run runs the catalogue on a GPU and returns a Report (results/hostile.json through cmd/hostile);
// Report.Check is what the suite's tests require of a recorded run.
//
//	env, _ := lab.Open()
//	rep, err := hostile.Run(env, hostile.Options{Seed: 1})
//	for _, l := range rep.Summary() { fmt.Println(l) }
package hostile

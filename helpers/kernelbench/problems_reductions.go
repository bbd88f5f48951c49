package kernelbench

import (
	"fmt"
	"slices"
)

// The reductions and norms of level 1, each over dimension 1 of x, as KernelBench's files define
// them (read at ProblemsCommit; x = torch.rand(shape) in every file):
//
//	level1/47_Sum_reduction_over_a_dimension.py  torch.sum(x, dim=1, keepdim=True); x (128, 4096, 4095)
//	level1/48_Mean_reduction_over_a_dimension.py torch.mean(x, dim=1); x (128, 4096, 4095)
//	level1/49_Max_reduction_over_a_dimension.py  torch.max(x, dim=1)[0]; x (128, 4096, 4095)
//	level1/53_Min_reduction_over_a_dimension.py  torch.min(x, dim=1)[0]; x (128, 4096, 4095)
//	level1/51_Argmax_over_a_dimension.py         torch.argmax(x, dim=1) (int64); x (128, 4096, 4095)
//	level1/52_Argmin_over_a_dimension.py         torch.argmin(x, dim=1) (int64); x (128, 4096, 4095)
//	level1/24_LogSoftmax.py                      torch.log_softmax(x, dim=1); x (4096, 393216)
//	level1/36_RMSNorm_.py                        x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5);
//	                                             x (112, 64, 512, 512)
//	level1/38_L1Norm_.py                         x / torch.mean(torch.abs(x), dim=1, keepdim=True); x (32768, 65535)
//	level1/39_L2Norm_.py                         x / torch.norm(x, p=2, dim=1, keepdim=True); x (32768, 65535)
const (
	SumDim     Op = "sum_dim"     // torch.sum(x, dim=1, keepdim=True)
	MeanDim    Op = "mean_dim"    // torch.mean(x, dim=1)
	MaxDim     Op = "max_dim"     // torch.max(x, dim=1)[0]
	MinDim     Op = "min_dim"     // torch.min(x, dim=1)[0]
	ArgmaxDim  Op = "argmax_dim"  // torch.argmax(x, dim=1), int64
	ArgminDim  Op = "argmin_dim"  // torch.argmin(x, dim=1), int64
	LogSoftmax Op = "log_softmax" // torch.log_softmax(x, dim=1)
	RMSNorm    Op = "rms_norm"    // x / sqrt(mean(x^2, dim=1) + eps)
	L1Norm     Op = "l1_norm"     // x / mean(|x|, dim=1)
	L2Norm     Op = "l2_norm"     // x / ||x||_2 along dim 1
)

// reduction is what the tables and the checks need of one of these ops.
type reduction struct {
	formula string
	slice   string // what one batch slice is called
	index   bool   // the output is int64 indices
}

var reductions = map[Op]reduction{
	SumDim:     {formula: "sum(x, dim=1, keepdim=True)", slice: "sample"},
	MeanDim:    {formula: "mean(x, dim=1)", slice: "sample"},
	MaxDim:     {formula: "max(x, dim=1).values", slice: "sample"},
	MinDim:     {formula: "min(x, dim=1).values", slice: "sample"},
	ArgmaxDim:  {formula: "argmax(x, dim=1), int64", slice: "sample", index: true},
	ArgminDim:  {formula: "argmin(x, dim=1), int64", slice: "sample", index: true},
	LogSoftmax: {formula: "log_softmax(x, dim=1)", slice: "row"},
	RMSNorm:    {formula: "x / sqrt(mean(x^2, dim=1) + eps)", slice: "sample"},
	L1Norm:     {formula: "x / mean(|x|, dim=1)", slice: "row"},
	L2Norm:     {formula: "x / norm(x, 2, dim=1)", slice: "row"},
}

// IsReduction reports whether op is one of the reductions and norms over dimension 1.
func IsReduction(op Op) bool { _, ok := reductions[op]; return ok }

// IndexOutput reports whether the problem's output is int64 indices (argmax, argmin): 8 bytes an
// element on the device, compared as exact integers.
func (p Problem) IndexOutput() bool { return reductions[p.Op].index }

// outElemBytes is the bytes of one output element: 8 for indices, 4 for float32.
func (p Problem) outElemBytes() int64 {
	if p.IndexOutput() {
		return 8
	}
	return 4
}

// Reduced is the problem's x seen as (outer, R, inner) around dimension 1: outer = x's first
// dimension, R = the reduced one, inner = the product of the rest (1 for a 2-D x).
func (p Problem) Reduced() (outer, R, inner int) {
	x := p.Tensors[0].Shape
	return x[0], x[1], prod(x[2:])
}

func reductionFormula(p Problem) string {
	if p.Op == RMSNorm {
		return fmt.Sprintf("x / sqrt(mean(x^2, dim=1) + %g)", p.Eps)
	}
	return reductions[p.Op].formula
}

func reductionShape(p Problem) string { return dims(p.Tensors[0].Shape) + ", dim 1" }

// reduceDim is a reduction over dimension 1 of a 3-D x from torch.rand; keepdim keeps it as 1.
func reduceDim(number int, name, title string, op Op, x []int, keepdim bool, n int) Problem {
	out := []int{x[0], x[2]}
	if keepdim {
		out = []int{x[0], 1, x[2]}
	}
	return Problem{Level: 1, Number: number, Name: name, Title: title, Op: op, Slices: n,
		Tensors: []Tensor{{Name: "x", Shape: slices.Clone(x), Dist: Rand}}, Out: out}
}

// sameShape is an op whose output has x's shape (log_softmax, the norms).
func sameShape(number int, name, title string, op Op, x []int, eps float64, n int) Problem {
	return Problem{Level: 1, Number: number, Name: name, Title: title, Op: op, Eps: eps, Slices: n,
		Tensors: []Tensor{{Name: "x", Shape: slices.Clone(x), Dist: Rand}}, Out: slices.Clone(x)}
}

// reductionProblems are the reductions and norms at KernelBench's shapes, or small ones. A trial
// compares 2 samples of 16.7M inputs for the reductions over (128, 4096, 4095), 4 rows of the row
// ops, 1 sample of 16.7M for RMS norm: each float64 reference well under a second. The small
// reductions keep an odd inner dimension (the tails of a column tile) and R not a multiple of the
// unrolling; the small log_softmax rows are just past lesson 04's ClusterMaxCols, where the op runs
// the same step as at KernelBench's rows (step 11 on a GPU where its teams fit); the small row
// norms have more rows than an H200 has SMs, so that row_norm.cu's blocks walk several rows each.
func reductionProblems(small bool) []Problem {
	pick := func(full, test int) int {
		if small {
			return test
		}
		return full
	}
	x3 := []int{pick(128, 4), pick(4096, 301), pick(4095, 257)}
	return []Problem{
		reduceDim(47, "47_Sum_reduction_over_a_dimension", "Sum over a dim", SumDim, x3, true, 2),
		reduceDim(48, "48_Mean_reduction_over_a_dimension", "Mean over a dim", MeanDim, x3, false, 2),
		reduceDim(49, "49_Max_reduction_over_a_dimension", "Max over a dim", MaxDim, x3, false, 2),
		reduceDim(53, "53_Min_reduction_over_a_dimension", "Min over a dim", MinDim, x3, false, 2),
		reduceDim(51, "51_Argmax_over_a_dimension", "Argmax over a dim", ArgmaxDim, x3, false, 2),
		reduceDim(52, "52_Argmin_over_a_dimension", "Argmin over a dim", ArgminDim, x3, false, 2),
		sameShape(24, "24_LogSoftmax", "LogSoftmax", LogSoftmax, []int{pick(4096, 8), pick(393216, 262147)}, 0, 4),
		sameShape(36, "36_RMSNorm_", "RMSNorm", RMSNorm, []int{pick(112, 3), 64, pick(512, 24), pick(512, 17)}, 1e-5, pick(1, 2)),
		sameShape(38, "38_L1Norm_", "L1Norm", L1Norm, []int{pick(32768, 300), pick(65535, 5001)}, 0, 4),
		sameShape(39, "39_L2Norm_", "L2Norm", L2Norm, []int{pick(32768, 300), pick(65535, 5001)}, 0, 4),
	}
}

// validateReduction checks a reduction's shapes: x of at least 2 dimensions, and an output of
// x's shape (log_softmax, the norms) or of x without dimension 1 (kept as 1 by the sum).
func (p Problem) validateReduction() error {
	x := p.Tensors[0].Shape
	if len(x) < 2 {
		return fmt.Errorf("kernelbench %s: %s reduces dimension 1 of x, which has shape %v", p.ID(), p.Op, x)
	}
	outer, _, inner := p.Reduced()
	want := outer * inner
	switch p.Op {
	case LogSoftmax, RMSNorm, L1Norm, L2Norm:
		want = prod(x)
	}
	if p.OutLen() != want {
		return fmt.Errorf("kernelbench %s: output %v has %d elements; %s of x %v gives %d", p.ID(), p.Out, p.OutLen(), p.Op, x, want)
	}
	return nil
}

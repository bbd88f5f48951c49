package kernelbench

import (
	"fmt"
	"maps"
	"slices"
)

// KernelBench's level-1 elementwise problems, read at ProblemsCommit (every file below was last
// changed by it): each is one float32 tensor from torch.rand, the output of its shape.
//
//	level1/5_Matrix_scalar_multiplication.py  A * s; A = torch.rand(16384*4, 4096*4), s = 3.14 (a
//	                                          Python float passed to forward)
//	level1/19_ReLU.py         torch.relu(x)
//	level1/20_LeakyReLU.py    F.leaky_relu(x, negative_slope=self.negative_slope), 0.01 (the default)
//	level1/21_Sigmoid.py      torch.sigmoid(x)
//	level1/22_Tanh.py         torch.tanh(x)
//	level1/25_Swish.py        x * torch.sigmoid(x)
//	level1/26_GELU_.py        F.gelu(x) (approximate='none': 0.5 x (1 + erf(x / sqrt 2)))
//	level1/27_SELU_.py        torch.selu(x)
//	level1/28_HardSigmoid.py  F.hardsigmoid(x)
//	level1/29_Softplus.py     F.softplus(x) (beta 1, threshold 20)
//	level1/30_Softsign.py     x / (1 + torch.abs(x))
//	level1/31_ELU.py          F.elu(x, alpha=self.alpha), alpha 1.0 (get_init_inputs)
//	level1/32_HardTanh.py     F.hardtanh(x, min_val=-1., max_val=1.)
//
// 19-32 take x = torch.rand(4096, 393216). The scalars the files pass are Problem.Args; PyTorch's
// own constants (SELU's, softplus's beta and threshold) are below.

// The elementwise ops.
const (
	ReLU        Op = "relu"
	LeakyReLU   Op = "leaky_relu"
	Sigmoid     Op = "sigmoid"
	Tanh        Op = "tanh"
	Swish       Op = "swish"
	GELU        Op = "gelu"
	SELU        Op = "selu"
	HardSigmoid Op = "hardsigmoid"
	Softplus    Op = "softplus"
	Softsign    Op = "softsign"
	ELU         Op = "elu"
	HardTanh    Op = "hardtanh"
	ScalarMul   Op = "matrix_scalar_mul"
)

// PyTorch's constants of the activations that KernelBench's files leave at their defaults.
const (
	// SELUAlpha and SELUScale are torch.selu's (Klambauer et al.).
	SELUAlpha = 1.6732632423543772848170429916717
	SELUScale = 1.0507009873554804934193349852946
	// SoftplusBeta and SoftplusThreshold are F.softplus's defaults: x itself above the threshold.
	SoftplusBeta      = 1.0
	SoftplusThreshold = 20.0
)

// Elementwise is one elementwise op: its KernelBench problem, its formula, the scalars its file
// passes (Problem.Args), and the unary.cu build that computes it.
type Elementwise struct {
	Op      Op
	Number  int
	Name    string // KernelBench's file name without ".py"
	Title   string
	Formula string
	// Args are the scalars KernelBench's file passes, by the keyword its PyTorch call names.
	Args map[string]float64
	// Act is unary.cu's ACT define.
	Act string
	// KernelArgs name the kernel's a and b: keys of Args, or "selu_alpha", "selu_scale",
	// "softplus_threshold" for PyTorch's constants; "" for an unused one.
	KernelArgs [2]string
}

// elementwise are KernelBench's elementwise problems, in its numbering.
var elementwise = []Elementwise{
	{Op: ScalarMul, Number: 5, Name: "5_Matrix_scalar_multiplication", Title: "Matrix scalar multiplication", Formula: "A * s",
		Args: map[string]float64{"s": 3.14}, Act: "ACT_SCALE", KernelArgs: [2]string{"s"}},
	{Op: ReLU, Number: 19, Name: "19_ReLU", Title: "ReLU", Formula: "torch.relu(x)", Act: "ACT_RELU"},
	{Op: LeakyReLU, Number: 20, Name: "20_LeakyReLU", Title: "LeakyReLU", Formula: "leaky_relu(x, negative_slope)",
		Args: map[string]float64{"negative_slope": 0.01}, Act: "ACT_LEAKY_RELU", KernelArgs: [2]string{"negative_slope"}},
	{Op: Sigmoid, Number: 21, Name: "21_Sigmoid", Title: "Sigmoid", Formula: "torch.sigmoid(x)", Act: "ACT_SIGMOID"},
	{Op: Tanh, Number: 22, Name: "22_Tanh", Title: "Tanh", Formula: "torch.tanh(x)", Act: "ACT_TANH"},
	{Op: Swish, Number: 25, Name: "25_Swish", Title: "Swish", Formula: "x * torch.sigmoid(x)", Act: "ACT_SWISH"},
	{Op: GELU, Number: 26, Name: "26_GELU_", Title: "GELU", Formula: "gelu(x) = 0.5 x (1 + erf(x / sqrt(2)))", Act: "ACT_GELU"},
	{Op: SELU, Number: 27, Name: "27_SELU_", Title: "SELU", Formula: "torch.selu(x)", Act: "ACT_SELU",
		KernelArgs: [2]string{"selu_alpha", "selu_scale"}},
	{Op: HardSigmoid, Number: 28, Name: "28_HardSigmoid", Title: "HardSigmoid", Formula: "hardsigmoid(x) = clamp(x / 6 + 1/2, 0, 1)", Act: "ACT_HARDSIGMOID"},
	{Op: Softplus, Number: 29, Name: "29_Softplus", Title: "Softplus", Formula: "softplus(x) = log(1 + exp(x)), x above 20", Act: "ACT_SOFTPLUS",
		KernelArgs: [2]string{"softplus_threshold"}},
	{Op: Softsign, Number: 30, Name: "30_Softsign", Title: "Softsign", Formula: "x / (1 + |x|)", Act: "ACT_SOFTSIGN"},
	{Op: ELU, Number: 31, Name: "31_ELU", Title: "ELU", Formula: "elu(x, alpha)", Args: map[string]float64{"alpha": 1.0},
		Act: "ACT_ELU", KernelArgs: [2]string{"alpha"}},
	{Op: HardTanh, Number: 32, Name: "32_HardTanh", Title: "HardTanh", Formula: "hardtanh(x, min_val, max_val)",
		Args: map[string]float64{"min_val": -1, "max_val": 1}, Act: "ACT_HARDTANH", KernelArgs: [2]string{"min_val", "max_val"}},
}

// Elementwises are the elementwise ops of the catalog, in KernelBench's numbering.
func Elementwises() []Elementwise { return append([]Elementwise{}, elementwise...) }

// ElementwiseOf is the elementwise op's entry, and whether op is one.
func ElementwiseOf(op Op) (Elementwise, bool) {
	i := slices.IndexFunc(elementwise, func(e Elementwise) bool { return e.Op == op })
	if i < 0 {
		return Elementwise{}, false
	}
	return elementwise[i], true
}

// Input is the name of the op's tensor in KernelBench's forward: A for the matrix scalar product,
// x for the activations.
func (e Elementwise) Input() string {
	if e.Op == ScalarMul {
		return "A"
	}
	return "x"
}

// KernelScalars are the kernel's a and b for a problem of this op: its Args, or PyTorch's constants.
func (e Elementwise) KernelScalars(p Problem) (a, b float64, err error) {
	var out [2]float64
	for i, name := range e.KernelArgs {
		switch name {
		case "":
		case "selu_alpha":
			out[i] = SELUAlpha
		case "selu_scale":
			out[i] = SELUScale
		case "softplus_threshold":
			out[i] = SoftplusThreshold
		default:
			v, ok := p.Args[name]
			if !ok {
				return 0, 0, fmt.Errorf("kernelbench %s: %s needs the scalar %q (args: %v)", p.ID(), e.Op, name, p.Args)
			}
			out[i] = v
		}
	}
	return out[0], out[1], nil
}

// elementwiseProblem is KernelBench's problem of op e over an input of rows x cols from torch.rand.
func elementwiseProblem(e Elementwise, rows, cols, slices int) Problem {
	return Problem{Level: 1, Number: e.Number, Name: e.Name, Title: e.Title, Op: e.Op, Slices: slices, Args: maps.Clone(e.Args),
		Tensors: []Tensor{{Name: e.Input(), Shape: []int{rows, cols}, Dist: Rand}}, Out: []int{rows, cols}}
}

// activationsProblems are the elementwise problems at KernelBench's shapes, or (small) at shapes
// whose element counts are not a multiple of 4 (the kernel's scalar tail runs). Each trial compares
// 4 rows: 1.6M activations of a 393216-wide row, 64K products of L1-5's 16384-wide rows.
func activationsProblems(small bool) []Problem {
	var out []Problem
	for _, e := range elementwise {
		rows, cols := 4096, 393216
		switch {
		case small && e.Op == ScalarMul:
			rows, cols = 6, 4099
		case small:
			rows, cols = 5, 12289
		case e.Op == ScalarMul:
			rows, cols = 16384*4, 4096*4
		}
		out = append(out, elementwiseProblem(e, rows, cols, 4))
	}
	return out
}

// validate checks what an elementwise problem needs: its one input, an output of the same shape,
// and the scalars the kernel takes.
func (e Elementwise) validate(p Problem) error {
	if len(p.Tensors) != 1 || p.Tensors[0].Name != e.Input() || p.Tensors[0].Param {
		return fmt.Errorf("kernelbench %s: %s takes one input tensor %q", p.ID(), e.Op, e.Input())
	}
	if !slices.Equal(p.Tensors[0].Shape, p.Out) {
		return fmt.Errorf("kernelbench %s: %s's output %v differs from its input %v", p.ID(), e.Op, p.Out, p.Tensors[0].Shape)
	}
	_, _, err := e.KernelScalars(p)
	return err
}

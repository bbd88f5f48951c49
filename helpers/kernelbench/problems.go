// Package kernelbench runs the KernelBench problems that the lessons cover the way KernelBench
// runs them: the problem's shapes and input distributions, its reference PyTorch model timed eager
// and under torch.compile, and its correctness rule (five trials of fresh random inputs, each
// passing torch.allclose with atol = rtol = 1e-2), beside this suite's own float64 check and its
// timing method. cmd/kernelbench is the command; this package holds what needs no GPU to test: the
// problems as data, the inputs, the slices compared, the verdicts, fast_p, the PyTorch script and
// the tables, and the run itself over a Backend, which lessons/kernelbench binds to the lessons'
// kernels.
//
//	for _, p := range kernelbench.Problems() {
//		fmt.Println(p.ID(), p.Name, p.ShapeString(), gpu.FormatBytes(p.TensorBytes()))
//	}
package kernelbench

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Where the problems were read. KernelBench's Python files are its own; this package writes what
// they define (shapes, formulas, input distributions, initialisation) as Go data.
//
// Read with the search tool's fetch of ScalingIntelligence/KernelBench, newest snapshot: HEAD
// 423217d9fda91e0c2d67e4a43bf62f96f6d104f1 (2026-03-05, "update all legacy python commands to UV").
// Every problem file used here was last changed by 6b1cea28ddea79af6b295fb9a3e3413f393efe3d
// (2025-07-21, "use torch.rand as default"), which switched get_inputs from torch.randn to torch.rand.
// What the files say at that commit:
//
//	level1/1_Square_matrix_multiplication_.py   torch.matmul(A, B); N = 2048*2; A, B = torch.rand(N, N)
//	level1/2_Standard_matrix_multiplication_.py torch.matmul(A, B); M = 1024*2, K = 4096*2, N = 2048*2;
//	                                            A = torch.rand(M, K), B = torch.rand(K, N)
//	level1/23_Softmax.py                        torch.softmax(x, dim=1); x = torch.rand(4096, 393216)
//	level1/40_LayerNorm.py                      nn.LayerNorm((64, 256, 256)) (weight 1, bias 0, eps 1e-5);
//	                                            x = torch.rand(16, 64, 256, 256)
//	level1/50_conv_standard_2D__square_input__square_kernel.py
//	                                            nn.Conv2d(3, 96, 11, stride=4, padding=2) (bias on, no
//	                                            ReLU: AlexNet's conv1 alone); x = torch.rand(256, 3, 224, 224)
//	level1/63_conv_standard_2D__square_input__square_kernel.py
//	                                            nn.Conv2d(16, 128, 3) (stride 1, padding 0, bias=False);
//	                                            x = torch.rand(16, 16, 1024, 1024)
//	level2/1_Conv2D_ReLU_BiasAdd.py             x = relu(nn.Conv2d(64, 128, 3)(x)) + bias, bias =
//	                                            nn.Parameter(torch.randn(128, 1, 1)); x = torch.rand(128, 64, 128, 128)
//
// Its evaluation (src/kernelbench/eval.py at HEAD) builds the model once after set_seed(42), draws
// fresh inputs for each correctness trial from a seed of its own (5 trials in
// scripts/eval_from_generations.py and run_and_check.py), and compares with
// torch.allclose(reference, new, atol=tol, rtol=tol): tol is 1e-4 for float32 at HEAD
// (get_tolerance_for_precision); its comment says that v0 and v0.1 used 1e-2, the rule the article
// examined. fast_p (src/kernelbench/score.py) is the count of problems that are correct and whose
// speedup over the baseline is strictly greater than p, over all problems.
// Its timing (timing.py) is CUDA events around the model under torch.no_grad, L2 thrashed before
// each trial, and the mean; this suite times both sides by its own method (the median) instead.
const (
	SourceRepo     = "ScalingIntelligence/KernelBench"
	SourceCommit   = "423217d9fda91e0c2d67e4a43bf62f96f6d104f1"
	ProblemsCommit = "6b1cea28ddea79af6b295fb9a3e3413f393efe3d"
)

// Op is the formula of a problem.
type Op string

// The formulas of the problems the lessons cover.
const (
	MatMul         Op = "matmul"              // C = A B
	Softmax        Op = "softmax"             // y = softmax(x) along dim 1
	LayerNorm      Op = "layernorm"           // y = (x - mean) / sqrt(var + eps) * weight + bias over the trailing NormDims
	Conv2d         Op = "conv2d"              // y = conv2d(x, weight) (+ bias)
	Conv2dReLUBias Op = "conv2d_relu_biasadd" // y = relu(conv2d(x, weight) + conv bias) + bias[k]
)

// Dist is how a tensor's values are drawn.
type Dist string

// The distributions of the problems' tensors.
const (
	Rand           Dist = "torch.rand"      // uniform in [0, 1)
	Randn          Dist = "torch.randn"     // standard normal
	KaimingUniform Dist = "kaiming_uniform" // nn.Conv2d's default: uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)), for weight and bias
	Ones           Dist = "ones"            // nn.LayerNorm's weight
	Zeros          Dist = "zeros"           // nn.LayerNorm's bias
)

// Tensor is one tensor of a problem: an input of the model's forward (fresh in every trial) or a
// parameter of the model (drawn once: KernelBench builds the model once), named as forward names
// it or as the model's state_dict names it.
type Tensor struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
	Dist  Dist   `json:"dist"`
	FanIn int    `json:"fan_in,omitempty"` // KaimingUniform's fan_in
	Param bool   `json:"param"`
}

// Len is the tensor's element count.
func (t Tensor) Len() int { return prod(t.Shape) }

// Bound is the half-width of a KaimingUniform tensor's interval: 1/sqrt(fan_in) (kaiming_uniform_
// with a = sqrt(5), and nn.Conv2d's bias rule).
func (t Tensor) Bound() float64 { return 1 / math.Sqrt(float64(max(t.FanIn, 1))) }

// ConvParams are a convolution's stride, zero padding and whether its nn.Conv2d has a bias.
type ConvParams struct {
	Stride  int  `json:"stride"`
	Padding int  `json:"padding"`
	Bias    bool `json:"bias"`
}

// Problem is one KernelBench problem: its level and number, its file name, its formula, its
// tensors (the forward's inputs first, the first of them batched along its first dimension, then the
// parameters), its output's shape, and how many batch slices a trial compares with PyTorch.
type Problem struct {
	Level  int    `json:"level"`
	Number int    `json:"number"`
	Name   string `json:"name"`  // KernelBench's file name without ".py"
	Title  string `json:"title"` // a short name for tables
	Op     Op     `json:"op"`
	// Tensors are forward's inputs, then the model's parameters.
	Tensors []Tensor   `json:"tensors"`
	Out     []int      `json:"out"`
	Conv    ConvParams `json:"conv"`
	// NormDims and Eps are layer norm's: the trailing dimensions normalised, and the epsilon (Eps
	// is RMS norm's too).
	NormDims int     `json:"norm_dims,omitempty"`
	Eps      float64 `json:"eps,omitempty"`
	// Slices is how many batch slices (rows of A or x, samples, images) each trial compares.
	Slices int `json:"slices"`
	// Args are the scalars KernelBench's file passes to its PyTorch call or uses in its forward
	// (negative_slope, alpha, min_val and max_val, the scalar s; a level-2 tail's multiplier and
	// divisor), by name.
	Args map[string]float64 `json:"args,omitempty"`
}

// ID is the problem's short name: "L1-23" for level 1 problem 23.
func (p Problem) ID() string { return fmt.Sprintf("L%d-%d", p.Level, p.Number) }

// File is the problem's file in KernelBench's repository.
func (p Problem) File() string {
	return fmt.Sprintf("KernelBench/level%d/%s.py", p.Level, p.Name)
}

// Input is the tensor of the given name, and whether there is one.
func (p Problem) Input(name string) (Tensor, bool) {
	for _, t := range p.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return Tensor{}, false
}

// Batch is the size of the batched dimension: the first of the first tensor and of the output.
func (p Problem) Batch() int { return p.Out[0] }

// InPer is the elements of one batch slice of the first tensor (a row of A, a sample, an image).
func (p Problem) InPer() int {
	if p.sliceCols() { // a column of A stored transposed
		return p.Tensors[0].Shape[0]
	}
	return prod(p.Tensors[0].Shape[1:])
}

// OutPer is the elements of one batch slice of the output.
func (p Problem) OutPer() int { return prod(p.Out[1:]) }

// OutLen is the output's element count.
func (p Problem) OutLen() int { return prod(p.Out) }

// TensorBytes is the device memory the problem's float32 tensors and output (int64 indices for
// argmax and argmin) take: the least any
// implementation needs (the scratch of a particular kernel comes on top).
func (p Problem) TensorBytes() int64 {
	n := int64(0)
	for _, t := range p.Tensors {
		n += int64(t.Len())
	}
	return 4*n + p.outElemBytes()*int64(p.OutLen())
}

// SlicesOn is the slices a trial compares: Slices, at most the batch.
func (p Problem) SlicesOn() int { return max(1, min(p.Slices, p.Batch())) }

// SliceName is what one batch slice is called in tables: "row", "sample", "image".
func (p Problem) SliceName() string {
	if _, ok := ElementwiseOf(p.Op); ok {
		return "row"
	}
	if _, _, batched, _, ok := MatMulFamily(p.Op); ok {
		if batched {
			return "batch"
		}
		return "row"
	}
	if r, ok := reductions[p.Op]; ok {
		return r.slice
	}
	switch p.Op {
	case MatMul, Softmax:
		return "row"
	case LayerNorm:
		return "sample"
	}
	return "image"
}

// Formula is the problem's computation in one line.
func (p Problem) Formula() string {
	if e, ok := ElementwiseOf(p.Op); ok {
		return e.Formula
	}
	if _, ok := mmOps[p.Op]; ok {
		return p.mmFormula()
	}
	if IsReduction(p.Op) {
		return reductionFormula(p)
	}
	switch p.Op {
	case MatMul:
		return "C = A @ B"
	case Softmax:
		return "softmax(x, dim=1)"
	case LayerNorm:
		return fmt.Sprintf("layer_norm(x) over the last %d dims (weight, bias, eps %g)", p.NormDims, p.Eps)
	case Conv2d:
		if p.Conv.Bias {
			return "conv2d(x, weight) + bias"
		}
		return "conv2d(x, weight), no bias"
	case Conv2dReLUBias:
		return "relu(conv2d(x, weight) + conv bias) + bias[k]"
	}
	return string(p.Op)
}

// ShapeString is the problem's shape for a table row.
func (p Problem) ShapeString() string {
	x := p.Tensors[0]
	if _, ok := ElementwiseOf(p.Op); ok {
		return dims(x.Shape)
	}
	if IsReduction(p.Op) {
		return reductionShape(p)
	}
	if _, ok := mmOps[p.Op]; ok {
		b := p.Tensors[1]
		return fmt.Sprintf("%s @ %s", dims(x.Shape), dims(b.Shape))
	}
	switch p.Op {
	case Softmax:
		return dims(x.Shape)
	case LayerNorm:
		return fmt.Sprintf("%s, last %d", dims(x.Shape), p.NormDims)
	}
	w, _ := p.Input(p.ConvPrefix() + "weight")
	return fmt.Sprintf("x %s, w %s, s%d p%d", dims(x.Shape), dims(w.Shape), p.Conv.Stride, p.Conv.Padding)
}

// ConvPrefix is the state_dict prefix of a conv's parameters: "conv1." for AlexNet's layer,
// "conv2d." and "conv." for the others, as KernelBench's models name their attribute.
func (p Problem) ConvPrefix() string {
	for _, t := range p.Tensors {
		if strings.HasSuffix(t.Name, "weight") {
			return strings.TrimSuffix(t.Name, "weight")
		}
	}
	return ""
}

// ConvShape is a conv problem's (N, C, H, W) input, K filters of R x R, stride and padding.
func (p Problem) ConvShape() (N, C, H, W, K, R int) {
	x := p.Tensors[0].Shape
	w, _ := p.Input(p.ConvPrefix() + "weight")
	return x[0], x[1], x[2], x[3], w.Shape[0], w.Shape[2]
}

func dims(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = strconv.Itoa(d)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func prod(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// Validate checks that a problem's data hangs together: a known op, positive dimensions, the first
// tensor and the output batched alike, and the tensors each op needs.
func (p Problem) Validate() error {
	if len(p.Tensors) == 0 || len(p.Out) == 0 {
		return fmt.Errorf("kernelbench %s: no tensors or no output", p.ID())
	}
	for _, t := range append([]Tensor{{Name: "output", Shape: p.Out}}, p.Tensors...) {
		if len(t.Shape) == 0 || slices.ContainsFunc(t.Shape, func(d int) bool { return d < 1 }) {
			return fmt.Errorf("kernelbench %s: %s has shape %v: every dimension must be at least 1", p.ID(), t.Name, t.Shape)
		}
	}
	if ax := p.BatchAxis(); len(p.Tensors[0].Shape) <= ax || p.Tensors[0].Shape[ax] != p.Out[0] {
		return fmt.Errorf("kernelbench %s: the batched input %s %v and the output %v differ in their first dimension", p.ID(), p.Tensors[0].Name, p.Tensors[0].Shape, p.Out)
	}
	need := map[Op][]string{MatMul: {"A", "B"}, BatchedMatMul: {"A", "B"}, MatMulTA: {"A", "B"}, MatMulTB: {"A", "B"}, MatMulTT: {"A", "B"},
		GemmMulLeakyReLU: {"x", "gemm.weight", "gemm.bias"}, GemmReLUDivide: {"x", "linear.weight", "linear.bias"}, GemmAddReLU: {"x", "gemm.weight", "bias"},
		Softmax: {"x"}, LayerNorm: {"x", "ln.weight", "ln.bias"},
		Conv2d: {"x"}, Conv2dReLUBias: {"x", "conv.weight", "conv.bias", "bias"}}
	if e, ok := ElementwiseOf(p.Op); ok {
		return e.validate(p)
	}
	for op := range reductions {
		need[op] = []string{"x"}
	}
	names, ok := need[p.Op]
	if !ok {
		return fmt.Errorf("kernelbench %s: unknown op %q", p.ID(), p.Op)
	}
	for _, n := range names {
		if _, ok := p.Input(n); !ok {
			return fmt.Errorf("kernelbench %s: %s needs a tensor %q", p.ID(), p.Op, n)
		}
	}
	if IsReduction(p.Op) {
		return p.validateReduction()
	}
	if p.Op == Conv2d || p.Op == Conv2dReLUBias {
		if _, ok := p.Input(p.ConvPrefix() + "weight"); !ok || p.Conv.Stride < 1 {
			return fmt.Errorf("kernelbench %s: a conv needs a weight tensor and a stride of at least 1", p.ID())
		}
	}
	if _, ok := mmOps[p.Op]; ok {
		return p.validateMM()
	}
	return nil
}

// The builders of the problems, one per formula, from the dimensions KernelBench's files set.

func matmul(number int, name, title string, m, k, n, slices int) Problem {
	return Problem{Level: 1, Number: number, Name: name, Title: title, Op: MatMul, Slices: slices,
		Tensors: []Tensor{{Name: "A", Shape: []int{m, k}, Dist: Rand}, {Name: "B", Shape: []int{k, n}, Dist: Rand}},
		Out:     []int{m, n}}
}

func softmax(rows, cols, slices int) Problem {
	return Problem{Level: 1, Number: 23, Name: "23_Softmax", Title: "Softmax", Op: Softmax, Slices: slices,
		Tensors: []Tensor{{Name: "x", Shape: []int{rows, cols}, Dist: Rand}}, Out: []int{rows, cols}}
}

func layerNorm(x []int, n int) Problem {
	norm := x[1:]
	return Problem{Level: 1, Number: 40, Name: "40_LayerNorm", Title: "LayerNorm", Op: LayerNorm, NormDims: len(norm), Eps: 1e-5, Slices: n,
		Tensors: []Tensor{{Name: "x", Shape: slices.Clone(x), Dist: Rand},
			{Name: "ln.weight", Shape: slices.Clone(norm), Dist: Ones, Param: true}, {Name: "ln.bias", Shape: slices.Clone(norm), Dist: Zeros, Param: true}},
		Out: slices.Clone(x)}
}

// conv is a conv problem: x (n, c, h, w) from torch.rand, k filters of r x r with nn.Conv2d's
// initialisation under the state_dict prefix, and the output shape the parameters give.
func conv(level, number int, name, title string, op Op, prefix string, n, c, h, w, k, r int, cp ConvParams, slices int) Problem {
	fan := c * r * r
	oh, ow := (h+2*cp.Padding-r)/cp.Stride+1, (w+2*cp.Padding-r)/cp.Stride+1
	p := Problem{Level: level, Number: number, Name: name, Title: title, Op: op, Conv: cp, Slices: slices,
		Tensors: []Tensor{{Name: "x", Shape: []int{n, c, h, w}, Dist: Rand},
			{Name: prefix + "weight", Shape: []int{k, c, r, r}, Dist: KaimingUniform, FanIn: fan, Param: true}},
		Out: []int{n, k, oh, ow}}
	if cp.Bias {
		p.Tensors = append(p.Tensors, Tensor{Name: prefix + "bias", Shape: []int{k}, Dist: KaimingUniform, FanIn: fan, Param: true})
	}
	if op == Conv2dReLUBias {
		p.Tensors = append(p.Tensors, Tensor{Name: "bias", Shape: []int{k, 1, 1}, Dist: Randn, Param: true})
	}
	return p
}

// catalog builds the problems at KernelBench's shapes, or (small) at small shapes of the same
// formulas for the tests. The slices per trial keep the float64 reference of a trial to a few
// seconds: 4 rows of a matmul or softmax, 2 samples of 4M for layer norm, 4 AlexNet images, 1 image
// of problem 63 (134M outputs of 144 taps), 2 of the level-2 problem.
func catalog(small bool) []Problem {
	pick := func(full, test int) int {
		if small {
			return test
		}
		return full
	}
	out := []Problem{
		matmul(1, "1_Square_matrix_multiplication_", "Square matmul", pick(4096, 256), pick(4096, 256), pick(4096, 256), 4),
		matmul(2, "2_Standard_matrix_multiplication_", "Standard matmul", pick(2048, 128), pick(8192, 1024), pick(4096, 256), 4),
		softmax(pick(4096, 6), pick(393216, 12288), 4),
		layerNorm([]int{pick(16, 4), pick(64, 8), pick(256, 32), pick(256, 32)}, 2),
		conv(1, 50, "50_conv_standard_2D__square_input__square_kernel", "Conv2D, AlexNet conv1", Conv2d, "conv1.",
			pick(256, 4), 3, pick(224, 64), pick(224, 64), 96, 11, ConvParams{Stride: 4, Padding: 2, Bias: true}, 4),
		conv(1, 63, "63_conv_standard_2D__square_input__square_kernel", "Conv2D 3x3", Conv2d, "conv2d.",
			pick(16, 2), 16, pick(1024, 64), pick(1024, 64), 128, 3, ConvParams{Stride: 1}, 1),
		conv(2, 1, "1_Conv2D_ReLU_BiasAdd", "Conv2D + ReLU + BiasAdd", Conv2dReLUBias, "conv.",
			pick(128, 2), 64, pick(128, 32), pick(128, 32), 128, 3, ConvParams{Stride: 1, Bias: true}, 2),
	}
	out = append(out, activationsProblems(small)...)
	out = append(out, matmulProblems(small)...)
	return append(out, reductionProblems(small)...)
}

// Problems are the KernelBench problems the lessons cover, at KernelBench's shapes.
func Problems() []Problem { return catalog(false) }

// SmallProblems are the same formulas at small shapes (each fits in a few MB), for tests.
func SmallProblems() []Problem { return catalog(true) }

// Select picks problems by a comma list: "1,23" (level 1 numbers), "L2-1" or "l1-40" (level and
// number); empty picks all. The error names what is unknown and lists what there is.
func Select(all []Problem, list string) ([]Problem, error) {
	if strings.TrimSpace(list) == "" {
		return all, nil
	}
	var ids []string
	for _, p := range all {
		ids = append(ids, p.ID())
	}
	var out []Problem
	for _, f := range strings.Split(list, ",") {
		f = strings.ToUpper(strings.TrimSpace(f))
		if f == "" {
			continue
		}
		if !strings.HasPrefix(f, "L") {
			f = "L1-" + f
		}
		i := slices.Index(ids, f)
		if i < 0 {
			return nil, fmt.Errorf("kernelbench: no problem %q (problems: %s; a bare number is level 1)", f, strings.Join(ids, ", "))
		}
		if !slices.ContainsFunc(out, func(p Problem) bool { return p.ID() == f }) {
			out = append(out, all[i])
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("kernelbench: %q names no problem (problems: %s)", list, strings.Join(ids, ", "))
	}
	return out, nil
}

// Part is part "k/n" of problems: every n-th problem from the k-th on (k from 1), so that n runs,
// on several GPUs or in several calls, share the problems and the catalog's large and small ones
// alike; "" is all of them. The parts of one n, together, are every problem once.
func Part(problems []Problem, part string) ([]Problem, error) {
	if part == "" {
		return problems, nil
	}
	var k, n int
	if _, err := fmt.Sscanf(part, "%d/%d", &k, &n); err != nil || n < 1 || k < 1 || k > n || fmt.Sprintf("%d/%d", k, n) != part {
		return nil, fmt.Errorf("kernelbench: part %q: want k/n with 1 <= k <= n, as 2/3", part)
	}
	var out []Problem
	for i := k - 1; i < len(problems); i += n {
		out = append(out, problems[i])
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("kernelbench: part %s of %d problems is empty", part, len(problems))
	}
	return out, nil
}

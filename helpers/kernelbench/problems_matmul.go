package kernelbench

import "fmt"

// The matrix-product family beyond problems 1 and 2, as KernelBench's files define them at
// ProblemsCommit (every file below was last changed by it):
//
//	level1/3_Batched_matrix_multiplication.py   torch.bmm(A, B); A = torch.rand(128, 512, 1024), B = torch.rand(128, 1024, 2048)
//	level1/4_Matrix_vector_multiplication_.py   torch.matmul(A, B); A = torch.rand(2048, 1048576), B = torch.rand(1048576, 1)
//	level1/6_Matmul_with_large_K_dimension_.py  torch.matmul(A, B); M = N = 256, K = 524288, torch.rand
//	level1/7_Matmul_with_small_K_dimension_.py  torch.matmul(A, B); M = N = 32768, K = 64, torch.rand
//	level1/8_Matmul_with_irregular_shapes_.py   torch.matmul(A, B); M = 8205, K = 2949, N = 5921, torch.rand
//	level1/9_Tall_skinny_matrix_multiplication_.py torch.matmul(A, B); A = torch.rand(32768, 32), B = torch.rand(32, 32768)
//	level1/16_Matmul_with_transposed_A.py       torch.matmul(A.T, B); A = torch.rand(8192, 2048), B = torch.rand(8192, 4096)
//	level1/17_Matmul_with_transposed_B.py       torch.matmul(A, B.T); A = torch.rand(2048, 8192), B = torch.rand(4096, 8192)
//	level1/18_Matmul_with_transposed_both.py    torch.matmul(A.T, B.T); A = torch.rand(8192, 2048), B = torch.rand(4096, 8192)
//	level2/12_Gemm_Multiply_LeakyReLU.py        leaky_relu(nn.Linear(8192, 8192)(x) * 2.0, 0.1); x = torch.rand(1024, 8192)
//	level2/63_Gemm_ReLU_Divide.py               relu(nn.Linear(8192, 8192)(x)) / 2.0; x = torch.rand(1024, 8192)
//	level2/76_Gemm_Add_ReLU.py                  relu(nn.Linear(8192, 8192, bias=False)(x) + bias), bias =
//	                                            nn.Parameter(torch.randn(8192)); x = torch.rand(1024, 8192)
//
// nn.Linear(in, out) holds weight (out, in) and bias (out), both uniform in [-1/sqrt(in), 1/sqrt(in))
// (kaiming_uniform_ with a = sqrt(5), and its bias rule): y = x weight^T + bias.

// The formulas of the matrix-product family.
const (
	BatchedMatMul    Op = "bmm"                     // C[b] = A[b] @ B[b]
	MatMulTA         Op = "matmul_ta"               // C = A.T @ B, A (K, M)
	MatMulTB         Op = "matmul_tb"               // C = A @ B.T, B (N, K)
	MatMulTT         Op = "matmul_tt"               // C = A.T @ B.T
	GemmMulLeakyReLU Op = "gemm_multiply_leakyrelu" // y = leaky_relu((x W^T + b) * Scalars[0], Scalars[1])
	GemmReLUDivide   Op = "gemm_relu_divide"        // y = relu(x W^T + b) / Scalars[0]
	GemmAddReLU      Op = "gemm_add_relu"           // y = relu(x W^T + bias), nn.Linear without its own bias
)

// mmOp is what a product of the family does: which operands are stored transposed, whether both are
// batched, and for the nn.Linear problems the state_dict prefix of the layer and the epilogue.
type mmOp struct {
	TransA, TransB, Batched bool
	Linear                  bool
	formula                 string
	// args are the tail's scalars (Problem.Args), in the order the formula and the kernel take them.
	args []string
}

var mmOps = map[Op]mmOp{
	MatMul:           {formula: "C = A @ B"},
	BatchedMatMul:    {Batched: true, formula: "C = torch.bmm(A, B)"},
	MatMulTA:         {TransA: true, formula: "C = A.T @ B"},
	MatMulTB:         {TransB: true, formula: "C = A @ B.T"},
	MatMulTT:         {TransA: true, TransB: true, formula: "C = A.T @ B.T"},
	GemmMulLeakyReLU: {TransB: true, Linear: true, formula: "leaky_relu((x W^T + b) * %g, %g)", args: []string{"multiplier", "negative_slope"}},
	GemmReLUDivide:   {TransB: true, Linear: true, formula: "relu(x W^T + b) / %g", args: []string{"divisor"}},
	GemmAddReLU:      {TransB: true, Linear: true, formula: "relu(x W^T + bias)"},
}

// MatMulFamily reports whether op is a matrix product of this family (MatMul included), with how
// its operands are stored.
func MatMulFamily(op Op) (transA, transB, batched, linear bool, ok bool) {
	m, ok := mmOps[op]
	return m.TransA, m.TransB, m.Batched, m.Linear, ok
}

// Dims is a product's batch (1 unless batched) and its M, K, N, read from the stored operands.
func (p Problem) Dims() (batch, M, K, N int) {
	m := mmOps[p.Op]
	a, b := p.Tensors[0].Shape, p.Tensors[1].Shape
	batch = 1
	if m.Batched {
		batch, a, b = a[0], a[1:], b[1:]
	}
	M, K = a[0], a[1]
	if m.TransA {
		M, K = a[1], a[0]
	}
	N = b[1]
	if m.TransB {
		N = b[0]
	}
	return batch, M, K, N
}

func (p Problem) mmFormula() string {
	m := mmOps[p.Op]
	if len(m.args) == 0 {
		return m.formula
	}
	var vs []any
	for _, v := range p.TailScalars() {
		vs = append(vs, v)
	}
	return fmt.Sprintf(m.formula, vs...)
}

// TailScalars are a level-2 GEMM's tail scalars from Args, in the order its formula and
// linear_epilogue.cu take them (0 for one that is missing: Validate refuses that).
func (p Problem) TailScalars() []float64 {
	names := mmOps[p.Op].args
	out := make([]float64, len(names))
	for i, n := range names {
		out[i] = p.Args[n]
	}
	return out
}

// sliceCols reports whether a trial's slices are columns of the first tensor (A stored transposed:
// a row of C is a column of A) rather than its leading rows.
func (p Problem) sliceCols() bool { return mmOps[p.Op].TransA }

// batchedInputs is how many leading inputs are cut to the trial's slices: both operands of a
// batched product, else the first.
func (p Problem) batchedInputs() int {
	if mmOps[p.Op].Batched {
		return 2
	}
	return 1
}

// BatchAxis is the dimension of the first tensor that runs along the output's first dimension.
func (p Problem) BatchAxis() int {
	if p.sliceCols() {
		return 1
	}
	return 0
}

// GatherCols copies the columns idx of x (rows x cols, row-major) into a rows x len(idx) array.
func GatherCols(x []float32, rows, cols int, idx []int) []float32 {
	out := make([]float32, 0, rows*len(idx))
	for r := 0; r < rows; r++ {
		for _, c := range idx {
			out = append(out, x[r*cols+c])
		}
	}
	return out
}

func mm2(number int, name, title string, op Op, a, b []int, out []int, slices int) Problem {
	return Problem{Level: 1, Number: number, Name: name, Title: title, Op: op, Slices: slices,
		Tensors: []Tensor{{Name: "A", Shape: a, Dist: Rand}, {Name: "B", Shape: b, Dist: Rand}}, Out: out}
}

// linear is a level-2 problem of nn.Linear(in, out) under the state_dict prefix (its own bias
// when bias), an extra randn bias of out when extra, and the epilogue's scalars.
func linear(number int, name, title string, op Op, prefix string, batch, in, out int, bias, extra bool, args map[string]float64, slices int) Problem {
	p := Problem{Level: 2, Number: number, Name: name, Title: title, Op: op, Slices: slices, Args: args,
		Tensors: []Tensor{{Name: "x", Shape: []int{batch, in}, Dist: Rand},
			{Name: prefix + "weight", Shape: []int{out, in}, Dist: KaimingUniform, FanIn: in, Param: true}},
		Out: []int{batch, out}}
	if bias {
		p.Tensors = append(p.Tensors, Tensor{Name: prefix + "bias", Shape: []int{out}, Dist: KaimingUniform, FanIn: in, Param: true})
	}
	if extra {
		p.Tensors = append(p.Tensors, Tensor{Name: "bias", Shape: []int{out}, Dist: Randn, Param: true})
	}
	return p
}

// matmulProblems are the family's problems at KernelBench's shapes or (small) at small shapes of
// the same formulas (problem 6 small still reaches hopper.SplitMinMACs, 2^28, so its plan is the
// full shape's). Slices keep a trial's float64 reference near a second on the GPU machine: one
// batch of problem 3 (1.1e9 multiply-adds), 16 rows of the matrix-vector product (64 MB of A written for PyTorch), 4 rows elsewhere.
func matmulProblems(small bool) []Problem {
	pick := func(full, test int) int {
		if small {
			return test
		}
		return full
	}
	M, K, N := pick(2048, 96), pick(8192, 200), pick(4096, 136) // problems 16-18
	return []Problem{
		mm2(3, "3_Batched_matrix_multiplication", "Batched matmul", BatchedMatMul,
			[]int{pick(128, 3), pick(512, 70), pick(1024, 130)}, []int{pick(128, 3), pick(1024, 130), pick(2048, 100)},
			[]int{pick(128, 3), pick(512, 70), pick(2048, 100)}, 1),
		matmul(4, "4_Matrix_vector_multiplication_", "Matrix-vector", pick(2048, 64), pick(1048576, 8192), 1, 16),
		matmul(6, "6_Matmul_with_large_K_dimension_", "Matmul, large K", pick(256, 64), pick(524288, 65536), pick(256, 64), 4),
		matmul(7, "7_Matmul_with_small_K_dimension_", "Matmul, small K", pick(32768, 512), pick(64, 64), pick(32768, 512), 4),
		matmul(8, "8_Matmul_with_irregular_shapes_", "Matmul, irregular shapes", pick(8205, 205), pick(2949, 149), pick(5921, 121), 4),
		matmul(9, "9_Tall_skinny_matrix_multiplication_", "Tall-skinny matmul", pick(32768, 1024), pick(32, 32), pick(32768, 1024), 4),
		mm2(16, "16_Matmul_with_transposed_A", "Matmul, A transposed", MatMulTA, []int{K, M}, []int{K, N}, []int{M, N}, 4),
		mm2(17, "17_Matmul_with_transposed_B", "Matmul, B transposed", MatMulTB, []int{M, K}, []int{N, K}, []int{M, N}, 4),
		mm2(18, "18_Matmul_with_transposed_both", "Matmul, both transposed", MatMulTT, []int{K, M}, []int{N, K}, []int{M, N}, 4),
		linear(12, "12_Gemm_Multiply_LeakyReLU", "Gemm + Multiply + LeakyReLU", GemmMulLeakyReLU, "gemm.",
			pick(1024, 64), pick(8192, 264), pick(8192, 136), true, false, map[string]float64{"multiplier": 2.0, "negative_slope": 0.1}, 4),
		linear(63, "63_Gemm_ReLU_Divide", "Gemm + ReLU + Divide", GemmReLUDivide, "linear.",
			pick(1024, 64), pick(8192, 264), pick(8192, 136), true, false, map[string]float64{"divisor": 2.0}, 4),
		linear(76, "76_Gemm_Add_ReLU", "Gemm + Add + ReLU", GemmAddReLU, "gemm.",
			pick(1024, 64), pick(8192, 264), pick(8192, 136), false, true, nil, 4),
	}
}

// validateMM checks a product's operands: two of them, of rank 2 (3 when batched, with the same
// batch), whose inner dimensions agree, and the output M x N (batch x M x N); and the epilogue's
// scalars.
func (p Problem) validateMM() error {
	m := mmOps[p.Op]
	rank := 2
	if m.Batched {
		rank = 3
	}
	a, b := p.Tensors[0].Shape, p.Tensors[1].Shape
	if len(a) != rank || len(b) != rank {
		return fmt.Errorf("kernelbench %s: %s needs operands of rank %d, has %v and %v", p.ID(), p.Op, rank, a, b)
	}
	if m.Batched && a[0] != b[0] {
		return fmt.Errorf("kernelbench %s: batched operands %v and %v differ in their batch", p.ID(), a, b)
	}
	batch, M, K, N := p.Dims()
	kb := b[rank-2]
	if m.TransB {
		kb = b[rank-1]
	}
	if kb != K {
		return fmt.Errorf("kernelbench %s: A %v gives K = %d, B %v gives %d", p.ID(), a, K, b, kb)
	}
	want := []int{M, N}
	if m.Batched {
		want = []int{batch, M, N}
	}
	if fmt.Sprint(p.Out) != fmt.Sprint(want) {
		return fmt.Errorf("kernelbench %s: output %v, the operands give %v", p.ID(), p.Out, want)
	}
	for _, n := range m.args {
		if _, ok := p.Args[n]; !ok {
			return fmt.Errorf("kernelbench %s: %s takes the scalars %v, has %v", p.ID(), p.Op, m.args, p.Args)
		}
	}
	if p.Op == GemmReLUDivide && p.Args["divisor"] == 0 {
		return fmt.Errorf("kernelbench %s: a divisor of 0", p.ID())
	}
	return nil
}

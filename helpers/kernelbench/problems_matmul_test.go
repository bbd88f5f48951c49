package kernelbench

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

// The matrix-product family as KernelBench's files define them at ProblemsCommit
// (problems_matmul.go's comment): operands, output, parameters, dimensions and the epilogue's
// constants.
func TestMatMulProblemsAsKernelBenchDefinesThem(t *testing.T) {
	want := []struct {
		id, file   string
		op         Op
		a, b, out  []int
		batch      int
		M, K, N    int
		params     map[string][]int
		scalars    []float64
		sliceNames string
	}{
		{"L1-3", "level1/3_Batched_matrix_multiplication", BatchedMatMul, []int{128, 512, 1024}, []int{128, 1024, 2048}, []int{128, 512, 2048}, 128, 512, 1024, 2048, nil, nil, "batch"},
		{"L1-4", "level1/4_Matrix_vector_multiplication_", MatMul, []int{2048, 1048576}, []int{1048576, 1}, []int{2048, 1}, 1, 2048, 1048576, 1, nil, nil, "row"},
		{"L1-6", "level1/6_Matmul_with_large_K_dimension_", MatMul, []int{256, 524288}, []int{524288, 256}, []int{256, 256}, 1, 256, 524288, 256, nil, nil, "row"},
		{"L1-7", "level1/7_Matmul_with_small_K_dimension_", MatMul, []int{32768, 64}, []int{64, 32768}, []int{32768, 32768}, 1, 32768, 64, 32768, nil, nil, "row"},
		{"L1-8", "level1/8_Matmul_with_irregular_shapes_", MatMul, []int{8205, 2949}, []int{2949, 5921}, []int{8205, 5921}, 1, 8205, 2949, 5921, nil, nil, "row"},
		{"L1-9", "level1/9_Tall_skinny_matrix_multiplication_", MatMul, []int{32768, 32}, []int{32, 32768}, []int{32768, 32768}, 1, 32768, 32, 32768, nil, nil, "row"},
		{"L1-16", "level1/16_Matmul_with_transposed_A", MatMulTA, []int{8192, 2048}, []int{8192, 4096}, []int{2048, 4096}, 1, 2048, 8192, 4096, nil, nil, "row"},
		{"L1-17", "level1/17_Matmul_with_transposed_B", MatMulTB, []int{2048, 8192}, []int{4096, 8192}, []int{2048, 4096}, 1, 2048, 8192, 4096, nil, nil, "row"},
		{"L1-18", "level1/18_Matmul_with_transposed_both", MatMulTT, []int{8192, 2048}, []int{4096, 8192}, []int{2048, 4096}, 1, 2048, 8192, 4096, nil, nil, "row"},
		{"L2-12", "level2/12_Gemm_Multiply_LeakyReLU", GemmMulLeakyReLU, []int{1024, 8192}, []int{8192, 8192}, []int{1024, 8192}, 1, 1024, 8192, 8192,
			map[string][]int{"gemm.weight": {8192, 8192}, "gemm.bias": {8192}}, []float64{2, 0.1}, "row"},
		{"L2-63", "level2/63_Gemm_ReLU_Divide", GemmReLUDivide, []int{1024, 8192}, []int{8192, 8192}, []int{1024, 8192}, 1, 1024, 8192, 8192,
			map[string][]int{"linear.weight": {8192, 8192}, "linear.bias": {8192}}, []float64{2}, "row"},
		{"L2-76", "level2/76_Gemm_Add_ReLU", GemmAddReLU, []int{1024, 8192}, []int{8192, 8192}, []int{1024, 8192}, 1, 1024, 8192, 8192,
			map[string][]int{"gemm.weight": {8192, 8192}, "bias": {8192}}, nil, "row"},
	}
	all := Problems()
	for _, w := range want {
		got, err := Select(all, w.id)
		if err != nil {
			t.Fatal(err)
		}
		p := got[0]
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", w.id, err)
		}
		if p.File() != "KernelBench/"+w.file+".py" || p.Op != w.op || !slices.Equal(p.TailScalars(), w.scalars) || p.SliceName() != w.sliceNames {
			t.Errorf("%s: %s %s %v %s, want %s %s %v %s", w.id, p.File(), p.Op, p.TailScalars(), p.SliceName(), w.file, w.op, w.scalars, w.sliceNames)
		}
		if x := p.Tensors[0]; !slices.Equal(x.Shape, w.a) || x.Dist != Rand || x.Param || !slices.Equal(p.Out, w.out) {
			t.Errorf("%s: first input %+v, output %v; want %v, %v", w.id, x, p.Out, w.a, w.out)
		}
		if w.params == nil {
			if b := p.Tensors[1]; len(p.Tensors) != 2 || !slices.Equal(b.Shape, w.b) || b.Dist != Rand || b.Param {
				t.Errorf("%s: tensors %+v, want B %v from torch.rand", w.id, p.Tensors, w.b)
			}
		}
		for name, shape := range w.params {
			pt, ok := p.Input(name)
			wantDist := KaimingUniform
			if name == "bias" { // problem 76's own bias: torch.randn
				wantDist = Randn
			}
			if !ok || !pt.Param || !slices.Equal(pt.Shape, shape) || pt.Dist != wantDist {
				t.Errorf("%s: parameter %s is %+v (found %v), want shape %v from %s", w.id, name, pt, ok, shape, wantDist)
			}
			if pt.Dist == KaimingUniform && math.Abs(pt.Bound()-1/math.Sqrt(8192)) > 1e-15 {
				t.Errorf("%s: %s bound %g, nn.Linear's is 1/sqrt(in_features)", w.id, name, pt.Bound())
			}
		}
		if batch, M, K, N := p.Dims(); batch != w.batch || M != w.M || K != w.K || N != w.N {
			t.Errorf("%s: dims %d x (%d, %d, %d), want %d x (%d, %d, %d)", w.id, batch, M, K, N, w.batch, w.M, w.K, w.N)
		}
		if p.Formula() == "" || strings.Contains(p.Formula(), "%!") || p.ShapeString() == "" {
			t.Errorf("%s: formula %q, shape %q", w.id, p.Formula(), p.ShapeString())
		}
	}
	if l2, err := Select(all, "L2-12"); err != nil {
		t.Error(err)
	} else if f := l2[0].Formula(); f != "leaky_relu((x W^T + b) * 2, 0.1)" {
		t.Errorf("L2-12's formula %q", f)
	}
}

// A trial's slices: rows of the output are columns of A stored transposed, batch entries of both
// operands of a batched product, rows of A otherwise; the shapes handed to PyTorch follow.
func TestMatMulSlices(t *testing.T) {
	small := SmallProblems()
	pick := func(id string) Problem {
		ps, err := Select(small, id)
		if err != nil {
			t.Fatal(err)
		}
		return ps[0]
	}
	ta := pick("L1-16")
	tensors := DrawTrial(ta, DrawParams(ta), 0)
	idx := []int{0, 5, ta.Batch() - 1}
	in := SliceInputs(ta, tensors, idx)
	K, M := ta.Tensors[0].Shape[0], ta.Tensors[0].Shape[1]
	if len(in[0]) != K*len(idx) || in[0][1] != tensors[0][5] || in[0][len(idx)*7+2] != tensors[0][7*M+M-1] || len(in[1]) != ta.Tensors[1].Len() {
		t.Errorf("A transposed: %d sliced values, want the %d of %d columns", len(in[0]), K*len(idx), len(idx))
	}
	if s := ta.SlicedShape(0, 3); !slices.Equal(s, []int{K, 3}) || ta.InPer()*ta.Batch() != ta.Tensors[0].Len() {
		t.Errorf("A transposed sliced to 3 rows of C: %v", s)
	}
	bm := pick("L1-3")
	tensors = DrawTrial(bm, DrawParams(bm), 1)
	in = SliceInputs(bm, tensors, []int{2})
	perA, perB := bm.Tensors[0].Len()/3, bm.Tensors[1].Len()/3
	if !slices.Equal(in[0], tensors[0][2*perA:]) || !slices.Equal(in[1], tensors[1][2*perB:]) {
		t.Error("batched: the slice is not batch entry 2 of A and of B")
	}
	if s := bm.SlicedShape(1, 1); !slices.Equal(s, []int{1, 130, 100}) {
		t.Errorf("batched B sliced: %v", s)
	}
	lin := pick("L2-12")
	if s := lin.SlicedShape(1, 2); !slices.Equal(s, lin.Tensors[1].Shape) {
		t.Errorf("a parameter was sliced: %v", s)
	}
}

// The epilogues as the level-2 files compute them, and Validate's refusals.
func TestMatMulEpiloguesAndRefusals(t *testing.T) {
	ps := Problems()
	by := map[string]Problem{}
	for _, p := range ps {
		by[p.ID()] = p
	}
	cases := []struct {
		id         string
		v, b, want float64
	}{
		{"L2-12", 1, 0.5, 3}, {"L2-12", -1, 0.5, -0.1}, {"L2-63", 1, 0.5, 0.75}, {"L2-63", -2, 0.5, 0}, {"L2-76", -0.25, 1, 0.75}, {"L2-76", -2, 1, 0},
	}
	for _, c := range cases {
		if got := by[c.id].Epilogue(c.v, c.b); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("%s epilogue(%g, bias %g) = %g, want %g", c.id, c.v, c.b, got, c.want)
		}
	}
	bad := by["L1-17"]
	bad.Tensors = slices.Clone(bad.Tensors)
	bad.Tensors[1].Shape = []int{4096, 8191}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "K") {
		t.Errorf("mismatched K: %v", err)
	}
	div := by["L2-63"]
	div.Args = map[string]float64{"divisor": 0}
	if err := div.Validate(); err == nil || !strings.Contains(err.Error(), "divisor") {
		t.Errorf("a zero divisor: %v", err)
	}
	few := by["L2-12"]
	few.Args = map[string]float64{"multiplier": 2}
	if err := few.Validate(); err == nil || !strings.Contains(err.Error(), "scalars") {
		t.Errorf("one scalar for two: %v", err)
	}
}

// The family's kernels compile with NVRTC (no GPU needed), each defining its kernel; the script
// handles every op of the family.
func TestMatMulKernelsCompileAndScriptOps(t *testing.T) {
	for _, k := range []struct {
		src  compile.Source
		name string
	}{{GEMV(), GEMVKernel}, {Transpose(), TransposeKernel}, {LinearEpilogue(), LinearEpilogueKernel}, {SplitTransposed(), SplitTransposedKernel}} {
		res, err := compile.PTX(k.src, compile.Options{Arch: "compute_80"})
		if err != nil {
			t.Errorf("%s: %v", k.src.Name, err)
			continue
		}
		if !strings.Contains(res.PTX, k.name) {
			t.Errorf("%s: the PTX has no %s", k.src.Name, k.name)
		}
	}
	for op := range mmOps {
		if !strings.Contains(Script(), fmt.Sprintf("%q", string(op))) {
			t.Errorf("the script does not handle op %q", op)
		}
	}
}

package kernelbench

import (
	"slices"
	"strings"
	"testing"
)

// The reductions and norms as KernelBench's files define them (problems_reductions.go's comment):
// x's shape, the output's (the sum keeps dim 1 as 1; argmax and argmin give int64), the bytes
// the tensors take, eps.
func TestReductionsAsKernelBenchDefinesThem(t *testing.T) {
	x3 := []int{128, 4096, 4095}
	in3, out3 := int64(4*128*4096*4095), int64(128*4095)
	want := []struct {
		id, name string
		op       Op
		in, out  []int
		bytes    int64
		eps      float64
	}{
		{"L1-47", "47_Sum_reduction_over_a_dimension", SumDim, x3, []int{128, 1, 4095}, in3 + 4*out3, 0},
		{"L1-48", "48_Mean_reduction_over_a_dimension", MeanDim, x3, []int{128, 4095}, in3 + 4*out3, 0},
		{"L1-49", "49_Max_reduction_over_a_dimension", MaxDim, x3, []int{128, 4095}, in3 + 4*out3, 0},
		{"L1-53", "53_Min_reduction_over_a_dimension", MinDim, x3, []int{128, 4095}, in3 + 4*out3, 0},
		{"L1-51", "51_Argmax_over_a_dimension", ArgmaxDim, x3, []int{128, 4095}, in3 + 8*out3, 0},
		{"L1-52", "52_Argmin_over_a_dimension", ArgminDim, x3, []int{128, 4095}, in3 + 8*out3, 0},
		{"L1-24", "24_LogSoftmax", LogSoftmax, []int{4096, 393216}, []int{4096, 393216}, 8 * 4096 * 393216, 0},
		{"L1-36", "36_RMSNorm_", RMSNorm, []int{112, 64, 512, 512}, []int{112, 64, 512, 512}, 8 * 112 * 64 * 512 * 512, 1e-5},
		{"L1-38", "38_L1Norm_", L1Norm, []int{32768, 65535}, []int{32768, 65535}, 8 * 32768 * 65535, 0},
		{"L1-39", "39_L2Norm_", L2Norm, []int{32768, 65535}, []int{32768, 65535}, 8 * 32768 * 65535, 0},
	}
	for _, w := range want {
		ps, err := Select(Problems(), w.id)
		if err != nil {
			t.Fatal(err)
		}
		p := ps[0]
		if err := p.Validate(); err != nil {
			t.Error(err)
		}
		x := p.Tensors[0]
		if p.Name != w.name || p.Op != w.op || len(p.Tensors) != 1 || x.Name != "x" || x.Dist != Rand || x.Param ||
			!slices.Equal(x.Shape, w.in) || !slices.Equal(p.Out, w.out) || p.Eps != w.eps {
			t.Errorf("%s: %s %s %+v out %v eps %g; want %s %s x %v out %v eps %g", w.id, p.Name, p.Op, p.Tensors, p.Out, p.Eps, w.name, w.op, w.in, w.out, w.eps)
		}
		if got := p.TensorBytes(); got != w.bytes {
			t.Errorf("%s: %d bytes, want %d", w.id, got, w.bytes)
		}
		if p.IndexOutput() != (w.op == ArgmaxDim || w.op == ArgminDim) {
			t.Errorf("%s: int64 output %v", w.id, p.IndexOutput())
		}
		if !strings.Contains(p.Formula(), "dim=1") || !strings.Contains(p.ShapeString(), "dim 1") {
			t.Errorf("%s: formula %q, shape %q", w.id, p.Formula(), p.ShapeString())
		}
	}
	// the small shapes keep the formulas, and each batch slice of a reduction stays one outer slice
	for _, p := range SmallProblems() {
		if !IsReduction(p.Op) {
			continue
		}
		if err := p.Validate(); err != nil {
			t.Error(err)
		}
		if outer, R, inner := p.Reduced(); p.InPer() != R*inner || outer != p.Batch() {
			t.Errorf("%s small: (%d, %d, %d), %d per slice", p.ID(), outer, R, inner, p.InPer())
		}
	}
}

// A reduction whose output does not match x is refused, naming both.
func TestValidateRefusesAReductionOfTheWrongShape(t *testing.T) {
	ps, _ := Select(Problems(), "47,24")
	ps[0].Out = []int{128, 4096}
	ps[1].Tensors[0].Shape = []int{4096}
	ps[1].Out = []int{4096}
	for _, p := range ps {
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), string(p.Op)) {
			t.Errorf("%s: %v", p.ID(), err)
		}
	}
}

// The PyTorch side rebuilds every reduction as its file writes it.
func TestScriptHasTheReductions(t *testing.T) {
	for op := range reductions {
		if !strings.Contains(Script(), `"`+string(op)+`": lambda x:`) {
			t.Errorf("the script has no %s", op)
		}
	}
	for _, f := range []string{"torch.sum(x, dim=1, keepdim=True)", "torch.max(x, dim=1)[0]", "torch.argmin(x, dim=1)",
		"torch.log_softmax(x, dim=1)", "torch.mean(x ** 2, dim=1, keepdim=True)", "torch.norm(x, p=2, dim=1, keepdim=True)"} {
		if !strings.Contains(Script(), f) {
			t.Errorf("the script has no %s", f)
		}
	}
}

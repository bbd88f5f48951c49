package kernelbench

import (
	"math"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	kb "github.com/cudalessons/cudalessons/helpers/kernelbench"
	"github.com/cudalessons/cudalessons/lessons/conv"
	"github.com/cudalessons/cudalessons/lessons/hopper"
	"github.com/cudalessons/cudalessons/lessons/matmul"
	"github.com/cudalessons/cudalessons/lessons/reduce"
)

// tiny returns small problem i with its batch cut to n (the tensors follow the problem's data).
func tiny(t *testing.T, i int) (kb.Problem, [][]float32) {
	t.Helper()
	p := kb.SmallProblems()[i]
	tensors := kb.DrawTrial(p, kb.DrawParams(p), 0)
	return p, tensors
}

// The conv reference on a slice of images (lesson 05's ConvAt per output) equals the lesson's
// independent im2col reference, bias or none; the level-2 problem adds ReLU and its bias.
func TestConvReference(t *testing.T) {
	for _, i := range []int{4, 5, 6} {
		p, tensors := tiny(t, i)
		n := 1
		idx := []int{p.Batch() - 1}
		in := kb.SliceInputs(p, tensors, idx)
		got, err := Reference(p, in, n)
		if err != nil {
			t.Fatal(err)
		}
		s := convShape(p)
		s.N = n
		ci := conv.Inputs{X: in[0], W: in[1], B: make([]float32, s.K)}
		if p.Conv.Bias {
			ci.B = in[2]
		}
		want := conv.Im2colConv(s, ci)
		if p.Op == kb.Conv2dReLUBias {
			bias := in[3]
			for j := range want {
				k := (j / (s.OH() * s.OW())) % s.K
				want[j] = math.Max(want[j], 0) + float64(bias[k])
			}
		}
		if c := check.Compare(got, want, check.FP64); !c.OK || len(got) != p.OutPer() {
			t.Errorf("%s: %v (%d outputs, one image has %d)", p.ID(), c, len(got), p.OutPer())
		}
	}
}

func TestMatMulSoftmaxLayerNormReferences(t *testing.T) {
	p, tensors := tiny(t, 0)
	in := kb.SliceInputs(p, tensors, []int{3})
	got, _ := Reference(p, in, 1)
	s := matmulShape(p)
	for _, j := range []int{0, 77, s.N - 1} {
		var want float64
		for k := 0; k < s.K; k++ {
			want += float64(in[0][k]) * float64(in[1][k*s.N+j])
		}
		if math.Abs(got[j]-want) > 1e-12*math.Abs(want) {
			t.Errorf("matmul row 3, column %d: %g, want %g", j, got[j], want)
		}
	}
	p, tensors = tiny(t, 2)
	in = kb.SliceInputs(p, tensors, []int{0, 5})
	got, _ = Reference(p, in, 2)
	cols := p.Out[1]
	for r := 0; r < 2; r++ {
		var sum float64
		for _, v := range got[r*cols : (r+1)*cols] {
			sum += v
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("softmax row %d sums to %g", r, sum)
		}
	}
	p, tensors = tiny(t, 3)
	in = kb.SliceInputs(p, tensors, []int{1})
	got, _ = Reference(p, in, 1)
	var mean, sq float64
	for _, v := range got {
		mean += v
	}
	mean /= float64(len(got))
	for _, v := range got {
		sq += (v - mean) * (v - mean)
	}
	if v := sq / float64(len(got)); math.Abs(mean) > 1e-12 || math.Abs(v-1) > 1e-3 {
		t.Errorf("layer norm with weight 1, bias 0: mean %g, variance %g", mean, v)
	}
}

// Which of the lessons' steps would run each problem at KernelBench's shape on an H100, decided
// by their plans with no GPU: what the command's rows will name.
func TestStepsOnH100(t *testing.T) {
	prof, err := gpu.LookupProfile("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	d := prof.Device()
	ps := kb.Problems()
	for _, i := range []int{0, 1} {
		if st := matmulStep(ps[i], d); st.Name != "9 fp16x3 split" {
			t.Errorf("%s: matmul step %s", ps[i].ID(), st.Name)
		}
		if err := matmulShape(ps[i]).Validate(); err != nil {
			t.Error(err)
		}
	}
	N, M := lnShape(ps[3])
	if N != 16 || M != 64*256*256 {
		t.Errorf("layer norm (%d, %d)", N, M)
	}
	if st := reduce.ForwardStep(d, N, M, true); st.Name != reduce.LNSteps[3].Name {
		t.Errorf("layer norm step %s", st.Name)
	}
	for _, i := range []int{4, 5, 6} {
		s := convShape(ps[i])
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", ps[i].ID(), err)
		}
		f32, ok32 := conv.FastestStep(s, d, conv.F32)
		f16, ok16 := conv.FastestStep(s, d, conv.FP16)
		if !ok32 || !ok16 || f32.Name != "3 implicit GEMM" || f16.Name != "5 cp.async FP16" {
			t.Errorf("%s: %s %v, %s %v", ps[i].ID(), f32.Name, ok32, f16.Name, ok16)
		}
		// On a Hopper both variants of every conv problem are lesson 08's step 7 fitted to the
		// layer, in its float32 split and in FP16; AlexNet's first layer (stride 4) by space to depth.
		for _, st := range []hopper.Step{hopper.ConvSplit, hopper.ConvFitted} {
			if _, ok := hopperConv(st, s, d); !ok {
				t.Errorf("%s (stride %d): lesson 08's %s does not take it", ps[i].ID(), s.S, st.Name)
			}
		}
		if s.OH() != ps[i].Out[2] || s.YLen() != ps[i].OutLen() {
			t.Errorf("%s: the lesson's output %dx%d, %d elements; the problem's %v", ps[i].ID(), s.OH(), s.OW(), s.YLen(), ps[i].Out)
		}
	}
	// problem 2's product needs the split's 16-bit halves on top of A, B and C
	if got, want := matmul.DeviceBytes(matmulShape(ps[1]), true), ps[1].TensorBytes()+2*2*(2048*8192+8192*4096); got != want {
		t.Errorf("matmul bytes %d, want %d", got, want)
	}
}

// The level-2 problem's ReLU/bias pass compiles with NVRTC (no GPU needed).
func TestReLUBiasCompiles(t *testing.T) {
	res, err := compile.PTX(kb.ReLUBias(), compile.Options{Arch: "compute_75"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.PTX, kb.ReLUBiasKernel) {
		t.Errorf("the PTX has no %s", kb.ReLUBiasKernel)
	}
}

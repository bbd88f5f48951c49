package kernelbench

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// The problems as KernelBench's files define them at ProblemsCommit (problems.go's comment): the
// batched input, the output, the parameters and the bytes the float32 tensors take.
func TestProblemsAsKernelBenchDefinesThem(t *testing.T) {
	want := []struct {
		id, file string
		op       Op
		in, out  []int
		params   map[string][]int
		dist     Dist
		bytes    int64
	}{
		{"L1-1", "KernelBench/level1/1_Square_matrix_multiplication_.py", MatMul, []int{4096, 4096}, []int{4096, 4096}, nil, Rand, 201326592},
		{"L1-2", "KernelBench/level1/2_Standard_matrix_multiplication_.py", MatMul, []int{2048, 8192}, []int{2048, 4096}, nil, Rand, 234881024},
		{"L1-23", "KernelBench/level1/23_Softmax.py", Softmax, []int{4096, 393216}, []int{4096, 393216}, nil, Rand, 12884901888},
		{"L1-40", "KernelBench/level1/40_LayerNorm.py", LayerNorm, []int{16, 64, 256, 256}, []int{16, 64, 256, 256},
			map[string][]int{"ln.weight": {64, 256, 256}, "ln.bias": {64, 256, 256}}, Rand, 570425344},
		{"L1-50", "KernelBench/level1/50_conv_standard_2D__square_input__square_kernel.py", Conv2d, []int{256, 3, 224, 224}, []int{256, 96, 55, 55},
			map[string][]int{"conv1.weight": {96, 3, 11, 11}, "conv1.bias": {96}}, Rand, 451650048},
		{"L1-63", "KernelBench/level1/63_conv_standard_2D__square_input__square_kernel.py", Conv2d, []int{16, 16, 1024, 1024}, []int{16, 128, 1022, 1022},
			map[string][]int{"conv2d.weight": {128, 16, 3, 3}}, Rand, 9630228480},
		{"L2-1", "KernelBench/level2/1_Conv2D_ReLU_BiasAdd.py", Conv2dReLUBias, []int{128, 64, 128, 128}, []int{128, 128, 126, 126},
			map[string][]int{"conv.weight": {128, 64, 3, 3}, "conv.bias": {128}, "bias": {128, 1, 1}}, Rand, 1577616384},
	}
	all := Problems()
	if len(all) < len(want) { // the families after them: problems_*_test.go
		t.Fatalf("%d problems, want at least %d", len(all), len(want))
	}
	for i, w := range want {
		got, err := Select(all, w.id)
		if err != nil {
			t.Errorf("problem %d: %v", i, err)
			continue
		}
		p := got[0]
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", w.id, err)
		}
		if p.ID() != w.id || p.File() != w.file || p.Op != w.op {
			t.Errorf("problem %d is %s %s %s, want %s %s %s", i, p.ID(), p.File(), p.Op, w.id, w.file, w.op)
		}
		x := p.Tensors[0]
		if !slices.Equal(x.Shape, w.in) || x.Dist != w.dist || x.Param || !slices.Equal(p.Out, w.out) {
			t.Errorf("%s: input %v %s (param %v), output %v; want %v %s, %v", w.id, x.Shape, x.Dist, x.Param, p.Out, w.in, w.dist, w.out)
		}
		for name, shape := range w.params {
			pt, ok := p.Input(name)
			if !ok || !pt.Param || !slices.Equal(pt.Shape, shape) {
				t.Errorf("%s: parameter %s is %+v (found %v), want shape %v", w.id, name, pt, ok, shape)
			}
		}
		if got := p.TensorBytes(); got != w.bytes {
			t.Errorf("%s: %d bytes of tensors, want %d", w.id, got, w.bytes)
		}
	}
}

// The details that change a result: matmul B is an input (fresh each trial); layer norm's weight
// and bias are nn.LayerNorm's ones and zeros and eps 1e-5; AlexNet's conv has a bias and stride 4,
// padding 2; problem 63 has none; the level-2 bias is torch.randn; the convs' weights follow
// nn.Conv2d's kaiming_uniform bound 1/sqrt(C*R*R).
func TestProblemDetails(t *testing.T) {
	ps := Problems()
	byID := map[string]Problem{}
	for _, p := range ps {
		byID[p.ID()] = p
	}
	if b, _ := byID["L1-2"].Input("B"); b.Param || b.Dist != Rand {
		t.Errorf("matmul B %+v: an input drawn by torch.rand in every trial", b)
	}
	ln := byID["L1-40"]
	if w, _ := ln.Input("ln.weight"); w.Dist != Ones {
		t.Errorf("layer norm weight %s, want ones", w.Dist)
	}
	if b, _ := ln.Input("ln.bias"); b.Dist != Zeros {
		t.Errorf("layer norm bias %s, want zeros", b.Dist)
	}
	if ln.NormDims != 3 || ln.Eps != 1e-5 || ln.InPer() != 64*256*256 {
		t.Errorf("layer norm over %d dims, eps %g, samples of %d", ln.NormDims, ln.Eps, ln.InPer())
	}
	alex := byID["L1-50"]
	if alex.Conv != (ConvParams{Stride: 4, Padding: 2, Bias: true}) {
		t.Errorf("AlexNet conv1 %+v", alex.Conv)
	}
	if w, _ := alex.Input("conv1.weight"); w.Dist != KaimingUniform || w.FanIn != 363 || math.Abs(w.Bound()-1/math.Sqrt(363)) > 1e-16 {
		t.Errorf("AlexNet weight %+v, bound %g", w, w.Bound())
	}
	if deep := byID["L1-63"]; deep.Conv != (ConvParams{Stride: 1}) || len(deep.Tensors) != 2 {
		t.Errorf("problem 63: %+v with %d tensors, want stride 1, no padding, no bias", deep.Conv, len(deep.Tensors))
	}
	l2 := byID["L2-1"]
	if b, _ := l2.Input("bias"); b.Dist != Randn || !b.Param {
		t.Errorf("level-2 bias %+v, want a torch.randn parameter", b)
	}
	if l2.Conv != (ConvParams{Stride: 1, Bias: true}) || l2.ConvPrefix() != "conv." {
		t.Errorf("level-2 conv %+v, prefix %q", l2.Conv, l2.ConvPrefix())
	}
	n, c, h, w, k, r := l2.ConvShape()
	if [6]int{n, c, h, w, k, r} != [6]int{128, 64, 128, 128, 128, 3} {
		t.Errorf("level-2 conv shape %v", [6]int{n, c, h, w, k, r})
	}
}

// The small problems keep every formula, parameter name and distribution at shapes of a few MB.
func TestSmallProblems(t *testing.T) {
	full, small := Problems(), SmallProblems()
	for i, s := range small {
		f := full[i]
		if err := s.Validate(); err != nil {
			t.Errorf("%s small: %v", s.ID(), err)
		}
		if s.ID() != f.ID() || s.Op != f.Op || s.Conv != f.Conv || len(s.Tensors) != len(f.Tensors) {
			t.Errorf("%s: the small problem differs in formula: %+v", f.ID(), s)
			continue
		}
		for j := range s.Tensors {
			if s.Tensors[j].Name != f.Tensors[j].Name || s.Tensors[j].Dist != f.Tensors[j].Dist || s.Tensors[j].Param != f.Tensors[j].Param {
				t.Errorf("%s: tensor %d %+v, full %+v", f.ID(), j, s.Tensors[j], f.Tensors[j])
			}
		}
		if s.TensorBytes() > 64<<20 {
			t.Errorf("%s small takes %d bytes", s.ID(), s.TensorBytes())
		}
	}
}

func TestSlicesAndShapes(t *testing.T) {
	ps := Problems()
	for _, p := range ps {
		if p.Batch()*p.InPer() != p.Tensors[0].Len() || p.Batch()*p.OutPer() != p.OutLen() {
			t.Errorf("%s: batch %d x %d in, %d out", p.ID(), p.Batch(), p.InPer(), p.OutPer())
		}
		if p.SlicesOn() < 1 || p.SlicesOn() > p.Batch() {
			t.Errorf("%s: %d slices of %d", p.ID(), p.SlicesOn(), p.Batch())
		}
		if p.ShapeString() == "" || p.Formula() == "" || p.Title == "" {
			t.Errorf("%s: empty description", p.ID())
		}
	}
	if s := ps[0].ShapeString(); s != "(4096, 4096) @ (4096, 4096)" {
		t.Errorf("matmul shape %q", s)
	}
	if s := ps[4].ShapeString(); s != "x (256, 3, 224, 224), w (96, 3, 11, 11), s4 p2" {
		t.Errorf("conv shape %q", s)
	}
	if got := ps[2].SliceName() + ps[3].SliceName() + ps[5].SliceName(); got != "rowsampleimage" {
		t.Errorf("slice names %q", got)
	}
}

func TestSelect(t *testing.T) {
	all := Problems()
	got, err := Select(all, "1, 23,l2-1,L1-23")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range got {
		ids = append(ids, p.ID())
	}
	if !slices.Equal(ids, []string{"L1-1", "L1-23", "L2-1"}) {
		t.Errorf("selected %v", ids)
	}
	if got, _ := Select(all, ""); len(got) != len(all) {
		t.Errorf("empty selection: %d problems", len(got))
	}
	for _, bad := range []string{"999", "L3-1", ",", "x"} {
		if _, err := Select(all, bad); err == nil || !strings.Contains(err.Error(), "L1-23") {
			t.Errorf("Select(%q): %v, want an error listing the problems", bad, err)
		}
	}
}

func TestPartsShareTheProblems(t *testing.T) {
	all := Problems()
	seen := map[string]int{}
	for k := 1; k <= 3; k++ {
		part, err := Part(all, fmt.Sprintf("%d/3", k))
		if err != nil {
			t.Fatal(err)
		}
		if len(part) < len(all)/3 || len(part) > len(all)/3+1 {
			t.Errorf("part %d/3 has %d of %d problems", k, len(part), len(all))
		}
		for _, p := range part {
			seen[p.ID()]++
		}
	}
	for _, p := range all {
		if seen[p.ID()] != 1 {
			t.Errorf("%s is in %d of the three parts, want 1", p.ID(), seen[p.ID()])
		}
	}
	if got, err := Part(all, ""); err != nil || len(got) != len(all) {
		t.Errorf("no part: %d problems, %v", len(got), err)
	}
	for _, bad := range []string{"0/3", "4/3", "1/0", "x", "1/3/2", "1/3 "} {
		if _, err := Part(all, bad); err == nil || !strings.Contains(err.Error(), "k/n") {
			t.Errorf("Part(%q): %v, want an error saying the form", bad, err)
		}
	}
	if _, err := Part(all[:1], "2/2"); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("an empty part: %v", err)
	}
}

func TestValidateRefuses(t *testing.T) {
	p := Problems()[0]
	p.Out = []int{4096, 0}
	if err := p.Validate(); err == nil {
		t.Error("a zero dimension passed")
	}
	q := Problems()[2]
	q.Out = []int{4095, 393216}
	if err := q.Validate(); err == nil {
		t.Error("a batch mismatch passed")
	}
	r := Problems()[3]
	r.Tensors = r.Tensors[:1]
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "ln.weight") {
		t.Errorf("layer norm without weight: %v", err)
	}
}

package kernelbench

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/compile"
)

// The elementwise problems as KernelBench's files define them at ProblemsCommit: number, file, op,
// the input's name, shape and distribution, the scalars the file passes; the small ones keep all of
// it at element counts that are not a multiple of 4 (the scalar tail runs).
func TestElementwiseProblemsAsKernelBenchDefinesThem(t *testing.T) {
	want := []struct {
		id, file string
		op       Op
		in       string
		shape    []int
		args     map[string]float64
	}{
		{"L1-5", "KernelBench/level1/5_Matrix_scalar_multiplication.py", ScalarMul, "A", []int{65536, 16384}, map[string]float64{"s": 3.14}},
		{"L1-19", "KernelBench/level1/19_ReLU.py", ReLU, "x", []int{4096, 393216}, nil},
		{"L1-20", "KernelBench/level1/20_LeakyReLU.py", LeakyReLU, "x", []int{4096, 393216}, map[string]float64{"negative_slope": 0.01}},
		{"L1-21", "KernelBench/level1/21_Sigmoid.py", Sigmoid, "x", []int{4096, 393216}, nil},
		{"L1-22", "KernelBench/level1/22_Tanh.py", Tanh, "x", []int{4096, 393216}, nil},
		{"L1-25", "KernelBench/level1/25_Swish.py", Swish, "x", []int{4096, 393216}, nil},
		{"L1-26", "KernelBench/level1/26_GELU_.py", GELU, "x", []int{4096, 393216}, nil},
		{"L1-27", "KernelBench/level1/27_SELU_.py", SELU, "x", []int{4096, 393216}, nil},
		{"L1-28", "KernelBench/level1/28_HardSigmoid.py", HardSigmoid, "x", []int{4096, 393216}, nil},
		{"L1-29", "KernelBench/level1/29_Softplus.py", Softplus, "x", []int{4096, 393216}, nil},
		{"L1-30", "KernelBench/level1/30_Softsign.py", Softsign, "x", []int{4096, 393216}, nil},
		{"L1-31", "KernelBench/level1/31_ELU.py", ELU, "x", []int{4096, 393216}, map[string]float64{"alpha": 1}},
		{"L1-32", "KernelBench/level1/32_HardTanh.py", HardTanh, "x", []int{4096, 393216}, map[string]float64{"min_val": -1, "max_val": 1}},
	}
	full, small := Problems(), SmallProblems()
	for _, w := range want {
		got, err := Select(full, w.id)
		if err != nil {
			t.Fatal(err)
		}
		p := got[0]
		x := p.Tensors[0]
		if p.File() != w.file || p.Op != w.op || len(p.Tensors) != 1 || x.Name != w.in || x.Dist != Rand || x.Param ||
			!slices.Equal(x.Shape, w.shape) || !slices.Equal(p.Out, w.shape) || !maps.Equal(p.Args, w.args) {
			t.Errorf("%s: %s %s, tensors %+v, out %v, args %v; want %s %s %s %v %v", w.id, p.File(), p.Op, p.Tensors, p.Out, p.Args, w.file, w.op, w.in, w.shape, w.args)
		}
		if err := p.Validate(); err != nil {
			t.Error(err)
		}
		if b := p.TensorBytes(); b != 8*int64(w.shape[0]*w.shape[1]) {
			t.Errorf("%s: %d bytes", w.id, b)
		}
		if p.SliceName() != "row" || p.ShapeString() != dims(w.shape) || p.Formula() == string(p.Op) {
			t.Errorf("%s: slice %q, shape %q, formula %q", w.id, p.SliceName(), p.ShapeString(), p.Formula())
		}
		s, _ := Select(small, w.id)
		sp := s[0]
		if err := sp.Validate(); err != nil || sp.Op != p.Op || !maps.Equal(sp.Args, p.Args) || sp.Tensors[0].Name != w.in || sp.OutLen()%4 == 0 || sp.Batch() < sp.SlicesOn() {
			t.Errorf("%s small: %+v (%v): the same op, input and scalars, an element count not a multiple of 4", w.id, sp, err)
		}
	}
	if n := len(activationsProblems(false)); n != len(want) {
		t.Errorf("%d elementwise problems, %d checked", n, len(want))
	}
}

// A problem that lacks a scalar its kernel takes, or has two inputs, is refused by Validate with
// what is missing; the kernel's scalars are the file's or PyTorch's constants.
func TestElementwiseValidate(t *testing.T) {
	ps, _ := Select(Problems(), "20,27,29")
	leaky := ps[0]
	leaky.Args = nil
	if err := leaky.Validate(); err == nil || !strings.Contains(err.Error(), "negative_slope") {
		t.Errorf("LeakyReLU without its slope: %v", err)
	}
	two := ps[1]
	two.Tensors = append(two.Tensors, Tensor{Name: "y", Shape: []int{4096, 393216}, Dist: Rand})
	if err := two.Validate(); err == nil || !strings.Contains(err.Error(), "one input") {
		t.Errorf("SELU with two inputs: %v", err)
	}
	e, _ := ElementwiseOf(SELU)
	if a, b, err := e.KernelScalars(ps[1]); err != nil || a != SELUAlpha || b != SELUScale {
		t.Errorf("SELU's scalars %g %g %v", a, b, err)
	}
	e, _ = ElementwiseOf(Softplus)
	if a, _, err := e.KernelScalars(ps[2]); err != nil || a != 20 {
		t.Errorf("softplus's threshold %g %v", a, err)
	}
	if _, ok := ElementwiseOf(Softmax); ok {
		t.Error("softmax is not elementwise")
	}
}

// The PyTorch script computes each elementwise problem as KernelBench's file writes it, reads the
// scalars by the Go data's names, and passes L1-5's s to forward after the tensor.
func TestScriptElementwise(t *testing.T) {
	s := Script()
	for _, e := range Elementwises() {
		if !strings.Contains(s, `"`+string(e.Op)+`": lambda`) {
			t.Errorf("the script does not compute %q", e.Op)
		}
		for name := range e.Args {
			if !strings.Contains(s, `S["`+name+`"]`) {
				t.Errorf("%s: the script never reads %q", e.Op, name)
			}
		}
	}
	ps, _ := Select(Problems(), "5")
	args, err := json.Marshal(newTorchFiles(t.TempDir(), ps[0], Config{}.Method).args)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(args), `"args":{"s":3.14}`) || !strings.Contains(s, `P.get("args")`) {
		t.Errorf("the scalars reach the script as \"args\": %s", args)
	}
	for _, expr := range []string{"torch.relu(x)", "x * torch.sigmoid(x)", "torch.nn.functional.gelu(x)", "torch.selu(x)",
		"x / (1 + torch.abs(x))", "torch.nn.functional.softplus(x)", "lambda A, s: A * s", `xs = [draw(t) for t in T if not t["param"]] + EXTRA`} {
		if !strings.Contains(s, expr) {
			t.Errorf("the script lacks %s", expr)
		}
	}
}

// unary.cu starts with its header comment, compiles for Turing and Hopper in every build the run
// uses (each op, 1 to 4 packs per thread, with and without the hint) without a warning, and
// declares both kernels; an unknown ACT fails to compile.
func TestUnaryCompiles(t *testing.T) {
	if !strings.HasPrefix(Unary().Code, "//") {
		t.Error("unary.cu lacks its header comment")
	}
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	for _, e := range Elementwises() {
		for _, ppt := range []int{1, 2, 4} {
			for _, arch := range []string{"compute_75", "compute_90"} {
				res, err := compile.PTX(Unary(), compile.Options{Arch: arch, Defines: UnaryDefines(e, ppt, ppt == 4)})
				if err != nil {
					t.Errorf("%s, %d packs, %s: %v", e.Op, ppt, arch, err)
					continue
				}
				if log := strings.Trim(res.Log, " \t\r\n\x00"); log != "" {
					t.Errorf("%s, %d packs, %s: NVRTC warns:\n%s", e.Op, ppt, arch, log)
				}
				// the packed loop moves 16-byte packs, ppt loads and stores a trip at least (the
				// compiler may unroll the trips of the cheap ops further), streaming in the hint build
				ld, st := strings.Count(res.PTX, "ld.global.nc.v4.f32"), strings.Count(res.PTX, "st.global.v4.f32")
				if ppt == 4 {
					ld, st = strings.Count(res.PTX, "ld.global.cs.v4.f32"), strings.Count(res.PTX, "st.global.cs.v4.f32")
				}
				if ld < ppt || ld != st {
					t.Errorf("%s, %d packs, %s: %d 16-byte loads and %d stores", e.Op, ppt, arch, ld, st)
				}
				for _, k := range []string{UnaryKernel, UnaryPack1Kernel} {
					if !strings.Contains(res.PTX, ".entry "+k+"(") {
						t.Errorf("%s: the PTX has no %s", e.Op, k)
					}
				}
			}
		}
	}
	if _, err := compile.PTX(Unary(), compile.Options{Arch: "compute_90", Defines: []string{"ACT=99"}}); err == nil || !strings.Contains(err.Error(), "ACT names no activation") {
		t.Errorf("ACT=99: %v", err)
	}
}

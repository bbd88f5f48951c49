//go:build !nocuda

package kernelbench

import (
	"math"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	kb "github.com/cudalessons/cudalessons/helpers/kernelbench"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"github.com/cudalessons/cudalessons/lessons/hopper"
)

// TestSanitize is the package's part of the sanitizer pass (cmd/sanitize runs it under memcheck,
// racecheck and synccheck): the problems that launch this package's own kernels at their small
// shapes, one trial, without PyTorch, checked against the float64 references on NaN-poisoned
// outputs: the conv level-2 problem (relu_bias.cu), GELU (unary.cu), the matrix-vector product
// (gemv.cu), A transposed (transpose.cu), a level-2 GEMM (linear_epilogue.cu), and the reductions
// (dim_reduce.cu as a sum and as an argmax, rms_norm.cu, row_norm.cu); on Hopper also
// both operands transposed and a level-2 GEMM on lesson 08's split (split_transposed.cu); then
// unary.cu for every op on the edge values, through both its kernels (checkEdgeValues). The
// lessons' kernels they also launch have their own TestSanitize (lesson 04's runs steps 9 and 11
// as log_softmax). Where the conv's epilogue does L2-1's ReLU and bias (lesson 08's fused
// epilogue, lesson 05's EPILOGUE2 build), relu_bias.cu is launched alone (reluBiasAlone).
func TestSanitize(t *testing.T) {
	env := labtest.Open(t)
	want := []string{kb.ReLUBiasKernel, kb.UnaryKernel, kb.GEMVKernel, kb.TransposeKernel, kb.LinearEpilogueKernel,
		kb.DimReduceKernel, kb.RMSNormKernel, kb.RowNormKernel}
	runs := []struct {
		list string
		b    backend
	}{{"L2-1,26,4,16,L2-63,47,51,36,38", backend{env: env}}}
	if hopper.NeedHopper("", env.Device()) == nil {
		runs = append(runs, struct {
			list string
			b    backend
		}{"18,L2-76", backend{env: env, forceSplit: true}})
		want = append(want, kb.SplitTransposedKernel)
	}
	for _, run := range runs {
		p, err := kb.Select(kb.SmallProblems(), run.list)
		if err != nil {
			t.Fatal(err)
		}
		results := kb.Run(p, run.b, kb.Config{Trials: 1, Dir: t.TempDir(), Method: env.Bench.Method, TorchWhy: "not in the sanitizer pass"})
		for _, r := range results {
			if !r.Ran() {
				t.Fatalf("%s did not run: %s%s", r.ID, r.Refused, r.Error)
			}
			if f := r.Variants[0].Float64; !f.OK {
				t.Errorf("%s %s: float64 check: %s", r.ID, r.Variants[0].Variant.Name, f.Why)
			}
		}
	}
	ran := map[string]bool{}
	for _, l := range env.Session.Launches() {
		ran[l.Kernel] = true
	}
	if !ran[kb.ReLUBiasKernel] { // the conv's epilogue ran L2-1's ReLU and bias: launch the pass alone
		reluBiasAlone(t, env)
		ran[kb.ReLUBiasKernel] = true
	}
	for _, k := range want {
		if !ran[k] {
			t.Errorf("%s never ran: %v", k, env.Session.Launches())
		}
	}
	checkEdgeValues(t, env)
}

// reluBiasAlone launches relu_bias.cu over a small y of 3 x 5 channels of 7 x 9 pixels, one of them
// NaN, and checks every element against relu(v) + bias[k] (NaN kept).
func reluBiasAlone(t *testing.T, env *lab.Env) {
	const k, hw, n = 5, 63, 3 * 5 * 63
	y, bias := make([]float32, n), make([]float32, k)
	for i := range y {
		y[i] = float32(i%11) - 5
	}
	y[17] = float32(math.NaN())
	for c := range bias {
		bias[c] = float32(c) / 4
	}
	prog, err := env.Build(kb.ReLUBias(), kb.ReLUBiasKernel)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := prog.Kernel(kb.ReLUBiasKernel)
	if err != nil {
		t.Fatal(err)
	}
	dy, err := gpu.Alloc[float32](env.Session, n)
	if err != nil {
		t.Fatal(err)
	}
	defer dy.Free()
	db, err := gpu.Alloc[float32](env.Session, k)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Free()
	if err := dy.CopyFromHost(y); err != nil {
		t.Fatal(err)
	}
	if err := db.CopyFromHost(bias); err != nil {
		t.Fatal(err)
	}
	if err := fn.Launch(gpu.Config{Grid: gpu.D1(2), Block: gpu.D1(128)}, dy, db, int64(n), int32(hw), int32(k)); err != nil {
		t.Fatal(err)
	}
	got, err := dy.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range y {
		want := math.Max(float64(v), 0) + float64(bias[(i/hw)%k])
		if math.IsNaN(float64(v)) {
			want = math.NaN()
		}
		if g := float64(got[i]); g != want && !(math.IsNaN(g) && math.IsNaN(want)) {
			t.Errorf("%s at %d: %g, want %g", kb.ReLUBiasKernel, i, g, want)
		}
	}
}

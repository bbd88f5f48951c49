//go:build !nocuda

package kernelbench

import (
	"testing"

	kb "github.com/cudalessons/cudalessons/helpers/kernelbench"
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
// as log_softmax).
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
	for _, k := range want {
		if !ran[k] {
			t.Errorf("%s never ran: %v", k, env.Session.Launches())
		}
	}
	checkEdgeValues(t, env)
}

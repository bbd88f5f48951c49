//go:build !nocuda

package kernelbench

import (
	"testing"

	kb "github.com/cudalessons/cudalessons/helpers/kernelbench"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// TestSanitize is the package's part of the sanitizer pass (cmd/sanitize runs it under memcheck,
// racecheck and synccheck): the level-2 problem (conv, then relu_bias.cu) and the reductions that
// launch this package's other kernels (dim_reduce.cu as a sum and as an argmax, rms_norm.cu,
// row_norm.cu), at their small shapes, one trial, without PyTorch, checked against the float64
// reference on NaN-poisoned outputs. The lessons' kernels it also launches have their own
// TestSanitize (lesson 04's runs steps 9 and 11 as log_softmax).
func TestSanitize(t *testing.T) {
	env := labtest.Open(t)
	p, err := kb.Select(kb.SmallProblems(), "L2-1,47,51,36,38")
	if err != nil {
		t.Fatal(err)
	}
	results := kb.Run(p, NewBackend(env), kb.Config{Trials: 1, Dir: t.TempDir(), Method: env.Bench.Method, TorchWhy: "not in the sanitizer pass"})
	for _, r := range results {
		if !r.Ran() {
			t.Fatalf("%s did not run: %s%s", r.ID, r.Refused, r.Error)
		}
		if f := r.Variants[0].Float64; !f.OK {
			t.Errorf("%s %s: float64 check: %s", r.ID, r.Variants[0].Variant.Name, f.Why)
		}
	}
	ran := map[string]bool{}
	for _, l := range env.Session.Launches() {
		ran[l.Kernel] = true
	}
	for _, k := range []string{kb.ReLUBiasKernel, kb.DimReduceKernel, kb.RMSNormKernel, kb.RowNormKernel} {
		if !ran[k] {
			t.Errorf("%s never ran: %v", k, env.Session.Launches())
		}
	}
}

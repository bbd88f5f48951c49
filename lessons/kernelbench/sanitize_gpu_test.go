//go:build !nocuda

package kernelbench

import (
	"testing"

	kb "github.com/cudalessons/cudalessons/helpers/kernelbench"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// TestSanitize is the package's part of the sanitizer pass (cmd/sanitize runs it under memcheck,
// racecheck and synccheck): the level-2 problem (conv, then relu_bias.cu) and GELU (unary.cu) at
// their small shapes, one trial, without PyTorch, checked against the float64 reference on
// NaN-poisoned outputs; then unary.cu for every op on the edge values, through both its kernels
// (checkEdgeValues). The lessons' kernels it also launches have their own TestSanitize.
func TestSanitize(t *testing.T) {
	env := labtest.Open(t)
	p, err := kb.Select(kb.SmallProblems(), "L2-1,L1-26")
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
	ran := false
	for _, l := range env.Session.Launches() {
		ran = ran || l.Kernel == kb.ReLUBiasKernel
	}
	if !ran {
		t.Errorf("%s never ran: %v", kb.ReLUBiasKernel, env.Session.Launches())
	}
	checkEdgeValues(t, env)
}

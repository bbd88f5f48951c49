//go:build !nocuda

package kernelbench

import (
	"math"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	kb "github.com/cudalessons/cudalessons/helpers/kernelbench"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// TestSanitize is the package's part of the sanitizer pass (cmd/sanitize runs it under memcheck,
// racecheck and synccheck): the level-2 problem (conv, then relu_bias.cu, this package's only
// kernel of its own; where the conv's epilogue does the ReLU and the bias, lesson 08's or lesson
// 05's EPILOGUE2 build, the pass is launched alone) at its small shape, one trial, without PyTorch, checked against the float64
// reference on NaN-poisoned outputs. The lessons' kernels it also launches have their own
// TestSanitize.
func TestSanitize(t *testing.T) {
	env := labtest.Open(t)
	p, err := kb.Select(kb.SmallProblems(), "L2-1")
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
	if !ran { // the conv's epilogue ran L2-1's ReLU and bias: launch the pass alone
		reluBiasAlone(t, env)
	}
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

//go:build !nocuda

package kernelbench

import (
	"path/filepath"
	"strings"
	"testing"

	kb "github.com/cudalessons/cudalessons/helpers/kernelbench"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"github.com/cudalessons/cudalessons/lessons/hopper"
)

// Every problem end to end at a small shape of its formula, through the lessons' kernels: two
// trials, both verdicts, the timings, fast_p and the receipt; with PyTorch's reference, eager and
// torch.compile where python3 has torch with CUDA (otherwise those columns are checked missing).
func TestSmallProblemsOnTheGPU(t *testing.T) {
	env := labtest.Open(t)
	var lines []string
	cfg := kb.Config{Trials: 2, Dir: t.TempDir(), Method: env.Bench.Method, Progress: func(l string) { lines = append(lines, l) }}
	run, worker, version, err := Torch()
	if err != nil {
		t.Logf("without PyTorch: %v", err)
		cfg.TorchWhy = err.Error()
	} else {
		defer worker.Close()
		cfg.Torch = run
	}
	results := kb.Run(kb.SmallProblems(), NewBackend(env), cfg)
	for _, r := range results {
		if !r.Ran() {
			t.Errorf("%s did not run: %s%s", r.ID, r.Refused, r.Error)
			continue
		}
		for i, v := range r.Variants {
			f := v.Float64
			t.Logf("%s %s (%s): %.3f ms, float64 %d/%d rel L2 %.2g, KernelBench %d/%d", r.ID, v.Variant.Name, v.Variant.DType,
				v.Timing.MedianMS, f.Passed, f.Trials, f.WorstRelL2, v.KB.Passed, v.KB.Trials)
			if v.Timing.MedianMS <= 0 || f.NonFinite != 0 {
				t.Errorf("%s %s: time %g ms, %d NaN/Inf", r.ID, v.Variant.Name, v.Timing.MedianMS, f.NonFinite)
			}
			switch {
			case i == 0 && !f.OK: // the float32-accurate kernel passes the float32 check
				t.Errorf("%s %s: float64 check failed: %s", r.ID, v.Variant.Name, f.Why)
			case v.Variant.Own != nil && f.OwnPassed != f.Trials: // a half-precision one its own bound
				t.Errorf("%s %s: %d/%d trials within its own %s bound (rel L2 %g)", r.ID, v.Variant.Name, f.OwnPassed, f.Trials, f.OwnTol, f.WorstRelL2)
			}
			if cfg.Torch != nil && !v.KB.Correct {
				t.Errorf("%s %s: KernelBench's check: %+v", r.ID, v.Variant.Name, v.KB)
			}
		}
		if cfg.Torch != nil && (r.Eager == nil || r.Eager.Median <= 0 || r.TorchNote != "") {
			t.Errorf("%s: PyTorch eager %v, note %q", r.ID, r.Eager, r.TorchNote)
		}
		if cfg.Torch == nil && r.Eager != nil {
			t.Errorf("%s: an eager time without PyTorch", r.ID)
		}
	}
	rep := kb.NewReport(env.Receipt, "test", 2, results)
	rep.Receipt.Torch = version
	for _, tab := range kb.Tables(rep) {
		t.Log("\n" + tab.Text())
	}
	if err := rep.Save(filepath.Join(t.TempDir(), "kernelbench.json")); err != nil {
		t.Error(err)
	}
	if len(lines) == 0 || !strings.Contains(strings.Join(lines, "\n"), "trial 2/2") {
		t.Errorf("progress lines: %q", lines)
	}
}

// A problem larger than the free memory is refused before any allocation, with both numbers.
func TestRefusesWhatDoesNotFit(t *testing.T) {
	env := labtest.Open(t)
	free, _, err := env.Session.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	p := kb.SmallProblems()[2]
	rows := int(free/4/int64(p.Out[1])) + 1 // x alone is over the free memory
	p.Tensors[0].Shape[0], p.Out[0] = rows, rows
	r := kb.RunProblem(p, NewBackend(env), kb.Config{Trials: 1})
	if r.Ran() || !strings.HasPrefix(r.Refused, "needs") || !strings.Contains(r.Refused, "free") {
		t.Errorf("refusal %q, error %q", r.Refused, r.Error)
	}
}

// The matrix-product family at its small shapes with lesson 08's split forced wherever its plan
// takes the shape (on Hopper; the small shapes are under its threshold otherwise): the batched
// product's entry by entry launches, the transposed operands, the weight transposed at load and
// the epilogue, all on the split's path that KernelBench's shapes take, checked against the
// float64 references on NaN-poisoned outputs.
func TestMatMulFamilyOnTheSplit(t *testing.T) {
	env := labtest.Open(t)
	if err := hopper.NeedHopper("the fp16x3 split", env.Device()); err != nil {
		t.Skip(err)
	}
	ps, err := kb.Select(kb.SmallProblems(), "3,6,7,8,9,16,17,18,L2-12,L2-63,L2-76")
	if err != nil {
		t.Fatal(err)
	}
	results := kb.Run(ps, backend{env: env, forceSplit: true}, kb.Config{Trials: 2, Dir: t.TempDir(), Method: env.Bench.Method, TorchWhy: "the split's path only"})
	for _, r := range results {
		if !r.Ran() {
			t.Errorf("%s did not run: %s%s", r.ID, r.Refused, r.Error)
			continue
		}
		v := r.Variants[0]
		t.Logf("%s %s: %.3f ms, float64 %d/%d rel L2 %.2g", r.ID, v.Variant.Name, v.Timing.MedianMS, v.Float64.Passed, v.Float64.Trials, v.Float64.WorstRelL2)
		if !strings.HasPrefix(v.Variant.Name, hopper.Lesson08Prefix+hopper.Split.Name) {
			t.Errorf("%s ran %s, not the split", r.ID, v.Variant.Name)
		}
		if f := v.Float64; !f.OK || f.OwnPassed != f.Trials {
			t.Errorf("%s %s: float64 check: %s (own bound %d/%d)", r.ID, v.Variant.Name, f.Why, f.OwnPassed, f.Trials)
		}
	}
	ran := map[string]bool{}
	for _, l := range env.Session.Launches() {
		ran[l.Kernel] = true
	}
	for _, k := range []string{hopper.Split.Kernel, kb.SplitTransposedKernel, kb.LinearEpilogueKernel} {
		if !ran[k] {
			t.Errorf("%s never ran", k)
		}
	}
}

package matmul

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
)

// The KernelBench method (the article's): a generated kernel is "correct" when its output matches
// PyTorch's on KBTrials fresh random inputs under torch.allclose with atol = rtol = KBTol, and
// fast_p is the fraction of problems both correct and more than p times faster than PyTorch.
const (
	KBTrials = 5
	KBTol    = 1e-2
)

// KBShape is the shape of the lesson's KernelBench trials: large enough for real dot products
// (K = 1024 terms), small enough that the float64 reference covers every output of every trial.
var KBShape = Shape{M: 1024, N: 1024, K: 1024}

// KBScales are the input scales of the trials: A and B uniform in [-scale, scale). allclose's atol
// is absolute, so what it accepts depends on the scale of the data; a relative check does not.
var KBScales = []float32{1, 0.01}

// Zeros is a wrong kernel (wrong_zeros.cu): it writes C = 0. allclose at 1e-2 accepts it on small
// inputs.
var Zeros = Step{Name: "wrong: writes zeros", File: "wrong_zeros.cu", Kernel: "mm_zeros", DType: "float32",
	Idea: "returns C = 0",
	Plan: func(s Shape, d gpu.DeviceInfo) (gpu.Config, error) {
		return gpu.Config{Grid: gpu.D1(gpu.WavesGrid(d, s.M*s.N, 256, 4)), Block: gpu.D1(256)}, nil
	}}

// AllClose is torch.allclose: every |got - want| <= atol + rtol * |want|, and no NaN.
func AllClose(got, want []float64, atol, rtol float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i, g := range got {
		if math.IsNaN(g) || math.Abs(g-want[i]) > atol+rtol*math.Abs(want[i]) {
			return false
		}
	}
	return true
}

// KBResult is one kernel under both checks over the trials.
type KBResult struct {
	Step       Step
	KBPassed   []int   // per scale of KBScales: trials that pass allclose at 1e-2
	OursPassed int     // trials that pass the lesson's float64 check at every scale
	WorstRelL2 float64 // the largest relative L2 error over all trials
	Trials     int
	Tol        string // the tolerance of the lesson's check
}

// KBSteps are the kernels of the KernelBench trials: the ladder, the hi-only split (a plain fp16
// product) and the zeros kernel. The last two are judged as float32 kernels: that is what they
// claim to replace.
func KBSteps() []Step { return append(append([]Step{}, Steps...), HiOnly, Zeros) }

// KernelBench runs every kernel of KBSteps that the GPU runs (a refused step is left out) on trials fresh random inputs of KBShape at each scale of
// KBScales, checked on every output both ways: allclose at 1e-2 against the float64 reference (the
// stand-in for PyTorch's float32 output, which differs from it by about 1e-6) and the lesson's check.
func KernelBench(env *lab.Env, trials int) ([]KBResult, error) {
	refused := refusedOn(env.Device())
	var steps []Step
	for _, st := range KBSteps() {
		if _, no := refused[st.Name]; !no {
			steps = append(steps, st)
		}
	}
	res := make([]KBResult, len(steps))
	oursOK := make([][]bool, len(steps))
	for i, st := range steps {
		res[i] = KBResult{Step: st, KBPassed: make([]int, len(KBScales)), Trials: trials}
		oursOK[i] = make([]bool, trials)
		for t := range oursOK[i] {
			oursOK[i][t] = true
		}
	}
	s := KBShape
	for t := 0; t < trials; t++ {
		for si, scale := range KBScales {
			a, b := Inputs(s, uint64(9000+t))
			for i := range a {
				a[i] *= scale
			}
			for i := range b {
				b[i] *= scale
			}
			p, err := newProblemFrom(env, s, a, b, SampleOf(s, s.M, 0, 0, 1))
			if err != nil {
				return nil, err
			}
			for i, st := range steps {
				run, _, _, err := p.Launcher(st, "")
				if err != nil {
					p.Free()
					return nil, err
				}
				got, err := p.Output(run)
				if err != nil {
					p.Free()
					return nil, err
				}
				dtype := st.DType
				if dtype == "fp16" {
					dtype = "float32"
				}
				tol := Tolerance(dtype, s.K)
				// The tolerances are for inputs in [-1, 1): scale the absolute term with the outputs.
				tol.Abs *= float64(scale) * float64(scale)
				c := check.Compare(got, p.want, tol)
				res[i].Tol = tol.Name
				if AllClose(got, p.want, KBTol, KBTol) {
					res[i].KBPassed[si]++
				}
				if !c.OK {
					oursOK[i][t] = false
				}
				res[i].WorstRelL2 = math.Max(res[i].WorstRelL2, c.RelL2)
			}
			p.Free()
		}
	}
	for i := range res {
		for _, ok := range oursOK[i] {
			if ok {
				res[i].OursPassed++
			}
		}
	}
	return res, nil
}

// kbNote is the note of a KernelBench record; KBRecords writes it and KernelBenchTable reads it.
const kbNote = "allclose(atol=rtol=1e-2): %d/%d trials at scale 1, %d/%d at scale 0.01; float64 check at %s: %d/%d"

// KBRecords turns KernelBench results into records of the case "kernelbench" (Correct: every
// trial passed the lesson's check).
func KBRecords(rs []KBResult) []record.Record {
	var out []record.Record
	for _, r := range rs {
		out = append(out, record.Record{Case: "kernelbench", Variant: r.Step.Name, Kind: "kernel", DType: r.Step.DType, Shape: KBShape.String(),
			Size: int64(r.KBPassed[0]), RelL2: r.WorstRelL2, Correct: r.OursPassed == r.Trials, Tol: r.Tol,
			Note: fmt.Sprintf(kbNote, r.KBPassed[0], r.Trials, r.KBPassed[1], r.Trials, r.Tol, r.OursPassed, r.Trials)})
	}
	return out
}

// FastP is KernelBench's fast_p over the ladder's steps of a run: the fraction of steps that are
// correct (the lesson's check) and more than p times faster than cuBLAS fp32, for each p.
func FastP(run *record.Run, ps []float64) []float64 {
	base := run.Median("matmul", TorchFP32)
	var recs []record.Record
	for _, r := range run.Select("matmul") {
		if r.Kind == "kernel" {
			recs = append(recs, r)
		}
	}
	out := make([]float64, len(ps))
	if base <= 0 || len(recs) == 0 {
		return out
	}
	for i, p := range ps {
		n := 0
		for _, r := range recs {
			if r.Correct && r.MedianMS > 0 && base/r.MedianMS > p {
				n++
			}
		}
		out[i] = float64(n) / float64(len(recs))
	}
	return out
}

// FastPs are the p of the fast_p table.
var FastPs = []float64{0, 0.5, 0.8, 1, 1.5, 2}

package matmul

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/check"
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
	KBPassed   int     // trials that pass allclose at 1e-2
	OursPassed int     // trials that pass the lesson's float64 check at the step's tolerance
	WorstRelL2 float64 // the largest relative L2 error over the trials
	Trials     int
	OursAsFP32 bool // the step was also judged at the float32 tolerance (the hi-only kernel claims float32)
}

// KernelBench runs every step of the ladder and the hi-only split on trials fresh random inputs of
// KBShape, checked on every output both ways: allclose at 1e-2 against the float64 reference (the
// stand-in for PyTorch's float32 output, which differs from it by 1e-6) and the lesson's check. The
// hi-only kernel is judged as a float32 kernel: that is what it replaces.
func KernelBench(env *lab.Env, trials int) ([]KBResult, error) {
	steps := append(append([]Step{}, Steps...), HiOnly)
	res := make([]KBResult, len(steps))
	for t := 0; t < trials; t++ {
		p, err := NewProblem(env, KBShape, uint64(9000+t), KBShape.M, 0, 0)
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
			tol := st.Tol(p.Shape.K)
			if st.DType == "fp16" {
				tol = Tolerance("float32", p.Shape.K)
				res[i].OursAsFP32 = true
			}
			c := check.Compare(got, p.want, tol)
			res[i].Step, res[i].Trials = st, t+1
			if AllClose(got, p.want, KBTol, KBTol) {
				res[i].KBPassed++
			}
			if c.OK {
				res[i].OursPassed++
			}
			res[i].WorstRelL2 = math.Max(res[i].WorstRelL2, c.RelL2)
		}
		p.Free()
	}
	return res, nil
}

// KBRecords turns KernelBench results into records of the case "kernelbench" (Size: trials passed
// at 1e-2; Correct: every trial passed the lesson's check).
func KBRecords(rs []KBResult) []record.Record {
	var out []record.Record
	for _, r := range rs {
		tol := r.Step.Tol(KBShape.K).Name
		if r.OursAsFP32 {
			tol = Tolerance("float32", KBShape.K).Name
		}
		out = append(out, record.Record{Case: "kernelbench", Variant: r.Step.Name, Kind: "kernel", DType: r.Step.DType, Shape: KBShape.String(),
			Size: int64(r.KBPassed), RelL2: r.WorstRelL2, Correct: r.OursPassed == r.Trials, Tol: tol,
			Note: fmt.Sprintf("allclose(atol=rtol=1e-2): %d/%d trials; float64 check at %s: %d/%d", r.KBPassed, r.Trials, tol, r.OursPassed, r.Trials)})
	}
	return out
}

// FastP is KernelBench's fast_p over the ladder's steps of a run: the fraction of steps that are
// correct (the lesson's check) and more than p times faster than cuBLAS fp32, for each p.
func FastP(run *record.Run, ps []float64) []float64 {
	base := median(run, "matmul", TorchFP32)
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

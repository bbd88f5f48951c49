package reduce

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
)

// LogSoftmaxSteps are the softmax steps that also write log_softmax when compiled with
// LOG_SOFTMAX: their write emits x - (max + log(sum)) instead of exp(x - max) / sum. Step 11 (long
// rows read once by teams of resident blocks) keeps x in its ring instead of exp(x - m); step 9 (a
// row over many blocks, two launches) takes any row on any GPU.
var LogSoftmaxSteps = []SoftmaxStep{SoftmaxSteps[10], SoftmaxSteps[9]}

// PickLogSoftmax is the step log_softmax runs: step 11 where PickSoftmax picks it for the row length
// (long rows on a GPU where its teams fit), step 9 otherwise.
func PickLogSoftmax(in SoftmaxInput) SoftmaxStep {
	if s := PickSoftmax(in); s.File == LogSoftmaxSteps[0].File {
		return s
	}
	return LogSoftmaxSteps[1]
}

// LogSoftmaxLauncher returns a function that queues log_softmax over each row of the rows x cols
// float32 x into y (PickLogSoftmax's step with LOG_SOFTMAX), the step's name, a function that says
// whether the last run failed in a way only the GPU knows (step 11's team gave up waiting), and a
// function that frees what the launch keeps. Shapes the step does not take are refused before any
// launch.
func LogSoftmaxLauncher(env *lab.Env, x, y *gpu.Buffer[float32], rows, cols int) (run func() error, step string, verify func() error, free func(), err error) {
	if !env.GPU() {
		return nil, "", nil, nil, fmt.Errorf("log_softmax: running kernels needs a GPU (%s)", env.Mode)
	}
	if rows < 1 || cols < 1 || rows*cols > x.Len() || rows*cols > y.Len() {
		return nil, "", nil, nil, fmt.Errorf("log_softmax (%d, %d): x holds %d and y %d floats, %d needed", rows, cols, x.Len(), y.Len(), rows*cols)
	}
	p := onBuffers(env, x, y, rows, cols)
	s := PickLogSoftmax(p.Input())
	plan, err := p.Plan(s)
	if err != nil {
		return nil, "", nil, nil, fmt.Errorf("log_softmax (%d, %d), %s: %w", rows, cols, s.Name, err)
	}
	plan.Defines = append(append([]string{}, plan.Defines...), "LOG_SOFTMAX")
	run, _, _, err = p.LaunchPlan(s, "", plan)
	if err != nil {
		p.Free()
		return nil, "", nil, nil, fmt.Errorf("log_softmax (%d, %d), %s: %w", rows, cols, s.Name, err)
	}
	return run, s.Name + " (log_softmax write)", p.RingFailed, p.Free, nil
}

// LogSoftmaxRow is the float64 log_softmax of one row: x - (max + log(sum of exp(x - max))).
func LogSoftmaxRow(x []float32) []float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, float64(v))
	}
	var sum float64
	for _, v := range x {
		sum += math.Exp(float64(v) - m)
	}
	lse := m + math.Log(sum)
	out := make([]float64, len(x))
	for j, v := range x {
		out[j] = float64(v) - lse
	}
	return out
}

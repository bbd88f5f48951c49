//go:build !nocuda

package reduce

import (
	"math"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// Both log_softmax steps against the float64 log_softmax on NaN-poisoned outputs: odd rows (heads
// and tails), a row with every other entry -inf (-inf out, as in PyTorch), step 11 in small teams
// walking more rows than their mailbox holds, and at its own plan on rows past ClusterMaxCols
// (where the op picks it).
func TestLogSoftmaxSteps(t *testing.T) {
	logSoftmaxSteps(t, labtest.Open(t), true)
}

// logSoftmaxSteps runs each of LogSoftmaxSteps with LOG_SOFTMAX on its shapes (long: step 11's
// own plan on rows past ClusterMaxCols too, which the sanitizer pass leaves out: its slices of
// 48 KB are slow under memcheck) and returns the variants that ran (a step a GPU refuses is logged
// and skipped).
func logSoftmaxSteps(t *testing.T, env *lab.Env, long bool) []string {
	t.Helper()
	var ran []string
	type run struct {
		s          SoftmaxStep
		rows, cols int
		ring       bool
	}
	cases := []run{{LogSoftmaxSteps[1], 3, 4099, false}, {LogSoftmaxSteps[1], 2, 65541, false}, {LogSoftmaxSteps[0], 40, 20011, true}}
	if long {
		cases = append(cases, run{LogSoftmaxSteps[0], 8, ClusterMaxCols + 3, false})
	}
	for i, c := range cases {
		v, err := logSoftmaxOn(env, c.s, c.rows, c.cols, uint64(190+i), c.ring)
		switch {
		case refused(err):
			t.Logf("%s (%d, %d): refused: %v", c.s.Name, c.rows, c.cols, err)
		case err != nil:
			t.Errorf("%s as log_softmax (%d, %d): %v", c.s.Name, c.rows, c.cols, err)
		default:
			ran = append(ran, v)
		}
	}
	return ran
}

// logSoftmaxOn runs step s as log_softmax on rows x cols values in [-4, 4) (row 0 with every
// other entry -inf) and checks it with the float32 softmax check against float64; it returns the
// variant that ran. ring: step 11 in teams of slices of 4 KB (the sanitizer pass's policy for it)
// instead of its own plan.
func logSoftmaxOn(env *lab.Env, s SoftmaxStep, rows, cols int, seed uint64, ring bool) (string, error) {
	n := rows * cols
	xs := Uniform(F32, n, -4, 4, seed)
	for j := 0; j < cols; j += 2 {
		xs[j] = float32(math.Inf(-1))
	}
	xb, err := gpu.Alloc[float32](env.Session, n)
	if err != nil {
		return "", err
	}
	defer xb.Free()
	yb, err := gpu.Alloc[float32](env.Session, n)
	if err != nil {
		return "", err
	}
	defer yb.Free()
	if err := xb.CopyFromHost(xs); err != nil {
		return "", err
	}
	if err := yb.Poison(); err != nil {
		return "", err
	}
	p := onBuffers(env, xb, yb, rows, cols)
	defer p.Free()
	plan, err := p.Plan(s)
	if ring {
		plan, err = PlanGridRing(p.Input(), RingPolicy{Threads: 256, SliceBytes: 4 << 10, MinTeams: 3, MaxSlots: 4})
	}
	if err != nil {
		return "", err
	}
	plan.Defines = append(append([]string{}, plan.Defines...), "LOG_SOFTMAX")
	run, plan, _, err := p.LaunchPlan(s, "", plan)
	if err != nil {
		return "", err
	}
	if err := run(); err != nil {
		return "", err
	}
	if err := env.Session.Synchronize(); err != nil {
		return "", err
	}
	if err := p.RingFailed(); err != nil {
		return "", err
	}
	ys, err := yb.ToHost()
	if err != nil {
		return "", err
	}
	want := make([]float64, n)
	for r := range rows {
		copy(want[r*cols:(r+1)*cols], LogSoftmaxRow(xs[r*cols:(r+1)*cols]))
	}
	return softmaxVariant(plan), check.Compare(check.Float64s(ys), want, SoftmaxTolerance(F32, nil)).Err()
}

//go:build !nocuda

package vecadd

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// Every step on sizes that end mid-block, mid-pack and mid-warp, and on pointers that are not
// 16-byte aligned, against the float64 reference with a NaN-poisoned output.
func TestStepsAreCorrect(t *testing.T) {
	env := labtest.Open(t)
	for _, n := range []int{0, 1, 3, 5, 255, 257, 1023, 1<<20 + 3} {
		for _, offset := range []int{0, 1} {
			checkSteps(t, env, n, offset)
		}
	}
}

// checkSteps checks every step on n elements whose buffers start offset elements into their
// allocations (the float4 step falls back to grid-stride when that breaks its alignment), each
// against the float64 reference on a NaN-poisoned output.
func checkSteps(t *testing.T, env *lab.Env, n, offset int) {
	t.Helper()
	p, err := NewProblemAt(env, n, uint64(n+offset), offset)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	for _, s := range Steps {
		res, err := p.Check(s, "")
		if err != nil {
			t.Fatalf("%s n=%d offset=%d: %v", s.Name, n, offset, err)
		}
		if !res.OK {
			t.Errorf("%s n=%d offset=%d: %v", s.Name, n, offset, res.Err())
		}
	}
}

// A kernel that skips an element must fail the check: the poisoned output stays NaN.
func TestCheckCatchesAnUnwrittenElement(t *testing.T) {
	env := labtest.Open(t)
	p, err := NewProblem(env, 1000, 9)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	lazy := `extern "C" __global__ void add_naive(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n - 1) c[i] = a[i] + b[i];
}`
	res, err := p.Check(Steps[0], lazy)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.NonFinite != 1 || res.FirstBad != 999 {
		t.Errorf("a kernel that skips the last element passed or was misreported: %+v", res)
	}
}

func TestRunRecordsEveryStep(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole lesson's run (sizes up to 256M floats) is left out of -short, which the sanitizers use; TestStepsAreCorrect covers every kernel")
	}
	env := labtest.Open(t)
	run, err := Run(env, true)
	if err != nil {
		t.Fatal(err)
	}
	labtest.InPlan(t, env, Lesson, run, true)
	for _, s := range Steps {
		r, ok := run.Find("add", s.Name, 0)
		if !ok || !r.Correct || r.MedianMS <= 0 || r.GBps <= 0 {
			t.Errorf("%s: %+v", s.Name, r)
		}
	}
	if len(run.Select("method")) != 4 || len(run.Kernels) != len(Steps) {
		t.Errorf("method records %d, kernel reports %d", len(run.Select("method")), len(run.Kernels))
	}
	if _, err := Figures(run); err != nil {
		t.Error(err)
	}
}

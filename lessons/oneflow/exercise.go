package oneflow

import (
	"errors"
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// Exercise is one of the lesson's exercises: the reader edits Starter (a correct but slow kernel)
// and CheckExercise compiles it, checks it against the reference and times it against a baseline.
type Exercise struct {
	Number  int
	Title   string
	Kernel  string // the extern "C" name the check looks up
	Task    string
	Starter string
}

// Exercise1 asks for the half multiply with packs of 8.
var Exercise1 = Exercise{Number: 1, Title: "Pack eight halves", Kernel: "mul_mine",
	Task: "Make mul_mine load and store 16 bytes per thread (8 halves, as a uint4) and multiply with __hmul2; keep a tail for n % 8. " +
		"The check runs it on n = 32M + 5 with the grid of the packed template (one thread per 8 elements, at most 32 waves), " +
		"compares with the float64 product and times it against the naive half kernel.",
	Starter: `#include <cuda_fp16.h>

// Correct but unpacked: one half per iteration of a grid-stride loop.
extern "C" __global__ void mul_mine(const __half *x, const __half *y, __half *z, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        z[i] = __hmul(x[i], y[i]);
    }
}
`}

// Exercise2 asks for the upsample backward in half with __half2 loads.
var Exercise2 = Exercise{Number: 2, Title: "Upsample backward with half2 loads", Kernel: "up2x_bwd_mine",
	Task: "Make up2x_bwd_mine read the two output-gradient pairs of each input element as two __half2 loads instead of four scalar ones, " +
		"sum in float and round once. The check runs it on (2,3,7,9) (odd H and W) and on the article's (16,32,80,80), and times it against the generic kernel.",
	Starter: `#include <cuda_fp16.h>

// Correct but scalar: four 2-byte loads per input element.
extern "C" __global__ void up2x_bwd_mine(const __half *dy, __half *dx, int n, int h, int w) {
    const int hw = h * w, ow = 2 * w;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x, step = blockDim.x * gridDim.x; i < n; i += step) {
        const int c = i / hw, off = i - c * hw, r = off / w, col = off - r * w;
        const int top = c * hw * 4 + (2 * r) * ow + 2 * col;  // element index of dy(2r, 2col)
        float s = __half2float(dy[top]) + __half2float(dy[top + 1]);
        s += __half2float(dy[top + ow]) + __half2float(dy[top + ow + 1]);
        dx[i] = __float2half_rn(s);
    }
}
`}

// Exercises are the lesson's exercises.
var Exercises = []Exercise{Exercise1, Exercise2}

// ExerciseResult is the outcome of a check.
type ExerciseResult struct {
	Compiled bool
	Ran      bool
	Checks   []string // one line per problem size
	Correct  bool
	MS       float64 // the reader's kernel, median
	BaseMS   float64 // the baseline, median
	Baseline string
}

// Speedup is the baseline's time over the reader's.
func (r ExerciseResult) Speedup() float64 {
	if r.MS <= 0 {
		return 0
	}
	return r.BaseMS / r.MS
}

// CheckExercise compiles code for the exercise and, in the GPU mode, checks and times it. A
// compile error or a wrong answer comes back as an error; in the no-GPU mode a successful compile
// returns a result with Ran false.
func CheckExercise(env *lab.Env, ex Exercise, code string) (ExerciseResult, error) {
	var res ExerciseResult
	src := compile.Source{Name: fmt.Sprintf("exercise%d.cu", ex.Number), Code: code}
	prog, err := env.Build(src, ex.Kernel)
	if err != nil {
		return res, err
	}
	res.Compiled = true
	if !env.GPU() {
		return res, nil
	}
	k, err := prog.Kernel(ex.Kernel)
	if err != nil {
		return res, err
	}
	res.Ran = true
	switch ex.Number {
	case 1:
		return checkExercise1(env, k, res)
	case 2:
		return checkExercise2(env, k, res)
	}
	return res, fmt.Errorf("no exercise %d", ex.Number)
}

func checkExercise1(env *lab.Env, k *gpu.Kernel, res ExerciseResult) (ExerciseResult, error) {
	for _, n := range []int{1, 13, 1001, MulN + 5} {
		err := func() error {
			p, err := NewMulProblem(env, F16, n, uint64(40+n%97), 0)
			if err != nil {
				return err
			}
			defer p.Free()
			cfg := gpu.Config{Grid: gpu.D1(NumBlocks(env.Session.Device, gpu.CeilDiv(n, 8))), Block: gpu.D1(Block)}
			run := func() error { return k.Launch(cfg, p.X, p.Y, p.Z, int64(n)) }
			c, err := p.checkRun(run)
			if err != nil {
				return err
			}
			res.Checks = append(res.Checks, fmt.Sprintf("n = %d: %s", n, c))
			if !c.OK {
				return fmt.Errorf("exercise 1, n = %d: %w", n, c.Err())
			}
			if n != MulN+5 {
				return nil
			}
			base, _, _, err := p.Launcher(MulSteps[0], "")
			if err != nil {
				return err
			}
			res.Baseline = "naive half kernel (step 1)"
			res.MS, res.BaseMS, err = timeAgainst(env, run, base)
			return err
		}()
		if err != nil {
			return res, err
		}
	}
	res.Correct = true
	return res, nil
}

// timeAgainst times the reader's kernel and the baseline by the bench's method, in the same run.
func timeAgainst(env *lab.Env, mine, base func() error) (mineMS, baseMS float64, err error) {
	t, err := env.Bench.Time(mine)
	if err != nil {
		return 0, 0, err
	}
	tb, err := env.Bench.Time(base)
	if err != nil {
		return 0, 0, err
	}
	return t.Median, tb.Median, nil
}

// checkRun runs a launch function once on a poisoned output and compares with the reference.
func (p *MulProblem) checkRun(run func() error) (check.Result, error) {
	if err := p.Z.Poison(); err != nil {
		return check.Result{}, err
	}
	if err := run(); err != nil {
		return check.Result{}, err
	}
	got, err := p.Z.Read()
	if err != nil {
		return check.Result{}, err
	}
	return compareMul(got, p.x, p.y, MulTolerance(p.DType)), nil
}

func checkExercise2(env *lab.Env, k *gpu.Kernel, res ExerciseResult) (ExerciseResult, error) {
	for _, shape := range [][4]int{{2, 3, 7, 9}, {1, 1, 1, 1}, ArticleShape} {
		err := func() error {
			p, err := NewUpProblem(env, F16, shape, 77, 0)
			if err != nil {
				return err
			}
			defer p.Free()
			in := shape[0] * shape[1] * shape[2] * shape[3]
			cfg := gpu.Config{Grid: gpu.D1(NumBlocks(env.Session.Device, in)), Block: gpu.D1(Block)}
			run := func() error { return k.Launch(cfg, p.DY, p.DX, int32(in), int32(shape[2]), int32(shape[3])) }
			if err := p.DX.Poison(); err != nil {
				return err
			}
			if err := run(); err != nil {
				return err
			}
			got, err := p.DX.Read()
			if err != nil {
				return err
			}
			c := check.Compare(got, UpBackwardReference(p.dy, shape), UpTolerance(F16, Backward))
			res.Checks = append(res.Checks, fmt.Sprintf("%s: %s", fmtShape(shape), c))
			if !c.OK {
				return fmt.Errorf("exercise 2, %s: %w", fmtShape(shape), c.Err())
			}
			if shape != ArticleShape {
				return nil
			}
			base, _, _, err := p.Launcher(UpSteps[0], Backward, "")
			if err != nil {
				return err
			}
			res.Baseline = "generic backward kernel (step 1)"
			res.MS, res.BaseMS, err = timeAgainst(env, run, base)
			return err
		}()
		if err != nil {
			return res, err
		}
	}
	res.Correct = true
	return res, nil
}

// ShowExercise runs CheckExercise and displays the outcome as notes. It returns an error only
// when something other than the reader's kernel failed; a compile error or a wrong answer is shown
// and returned too, since the reader must fix it.
func ShowExercise(env *lab.Env, ex Exercise, code string) error {
	res, err := CheckExercise(env, ex, code)
	var ce *compile.Error
	switch {
	case errors.As(err, &ce):
		return show.Error(err)
	case err != nil:
		for _, l := range res.Checks {
			show.Note(show.Info, l)
		}
		return show.Error(err)
	case !res.Ran:
		show.Note(show.Info, fmt.Sprintf("Exercise %d compiled with NVRTC for %s. Running, checking and timing it needs a GPU (%s).", ex.Number, env.Arch(), env.Mode))
		return nil
	}
	for _, l := range res.Checks {
		show.Note(show.Success, l)
	}
	show.Note(show.Info, fmt.Sprintf("Exercise %d: your kernel %.1f µs, the %s %.1f µs: %s.", ex.Number, res.MS*1e3, res.Baseline, res.BaseMS*1e3, show.Times(res.Speedup())))
	return nil
}

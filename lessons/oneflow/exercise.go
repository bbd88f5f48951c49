package oneflow

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	ko "github.com/cudalessons/cudalessons/kernels/oneflow"
)

// Exercises are the lesson's exercises (Lesson.Exercises). Each starter is a correct but slow
// kernel; each check compiles the reader's kernel, looks at its PTX for the memory accesses the
// task asks for (without a GPU), and on a GPU checks it on NaN-poisoned outputs against the
// float64 reference, sizes with a tail included, and times it against the lesson's baseline step.
var Exercises = []lab.Exercise{Exercise1, Exercise2}

// Exercise1 asks for the half multiply with packs of 8.
var Exercise1 = lab.Exercise{Number: 1, Title: "Exercise 1: pack eight halves", Kernel: "mul_mine",
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
`,
	Solution: ko.Kernels.CodeOf("solutions/ex1_mul_half8.cu"),
	Check:    checkExercise1}

// Exercise2 asks for the upsample backward in half with __half2 loads.
var Exercise2 = lab.Exercise{Number: 2, Title: "Exercise 2: upsample backward with half2 loads", Kernel: "up2x_bwd_mine",
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
`,
	Solution: ko.Kernels.CodeOf("solutions/ex2_up2x_bwd_half2.cu"),
	Check:    checkExercise2}

// buildExercise compiles the reader's code and reads its global loads and stores from the PTX. A
// nil kernel program means the result already says why the exercise failed.
func buildExercise(env *lab.Env, x lab.Exercise, code string) (*lab.Program, accesses, lab.ExerciseResult, error) {
	prog, r, err := env.BuildExercise(x, code)
	if prog == nil {
		return nil, accesses{}, r, err
	}
	r.Report = prog.Report(x.Kernel, Block, 0)
	ins, err := compile.Instructions(prog.Compiled.PTX, x.Kernel)
	if err != nil {
		return nil, accesses{}, r, err
	}
	var a accesses
	for _, in := range ins {
		switch {
		case in.Is("ld.global"):
			a.loads = append(a.loads, in.Bytes)
		case in.Is("st.global"):
			a.stores = append(a.stores, in.Bytes)
		}
	}
	if len(a.stores) == 0 {
		r.Reason = fmt.Sprintf("Not yet: %s stores nothing to global memory (no st.global in its PTX), so its output is never written.", x.Kernel)
		return nil, a, r, nil
	}
	return prog, a, r, nil
}

// accesses are the bytes per thread of a kernel's global loads and stores, from its PTX.
type accesses struct{ loads, stores []int }

func widest(bytes []int) int {
	w := 0
	for _, b := range bytes {
		w = max(w, b)
	}
	return w
}

func count(bytes []int, n int) int {
	c := 0
	for _, b := range bytes {
		if b == n {
			c++
		}
	}
	return c
}

// notRun is the no-GPU mode's verdict on a kernel that compiled and does what the task asks in its PTX.
func notRun(env *lab.Env, x lab.Exercise, prog *lab.Program, r lab.ExerciseResult, what string) lab.ExerciseResult {
	r.Passed = true
	r.Reason = fmt.Sprintf("%s compiled with NVRTC for %s and %s. Running, checking and timing it needs a GPU (%s).",
		x.Kernel, prog.Compiled.Arch, what, env.Mode)
	return r
}

// checkExercise1 wants 16-byte loads and stores in the PTX, then (GPU) checks n = 1, 13, 1001 and
// 32M + 5 with the packed template's grid and times the largest against step 1.
func checkExercise1(env *lab.Env, code string) (lab.ExerciseResult, error) {
	x := lab.Exercise{Number: 1, Kernel: "mul_mine"} // Exercise1's name (Exercise1 refers to this function)
	prog, a, r, err := buildExercise(env, x, code)
	if prog == nil {
		return r, err
	}
	if widest(a.loads) < 16 || widest(a.stores) < 16 {
		r.Reason = fmt.Sprintf("Not yet: %s's widest global load moves %d bytes and its widest store %d bytes per thread (from its PTX); "+
			"the exercise is 16 bytes each (a uint4: 8 halves).", x.Kernel, widest(a.loads), widest(a.stores))
		return r, nil
	}
	if !env.GPU() {
		return notRun(env, x, prog, r, "loads and stores 16 bytes per thread"), nil
	}
	k, err := prog.Kernel(x.Kernel)
	if err != nil {
		return r, err
	}
	r.Ran = true
	for _, n := range []int{1, 13, 1001, MulN + 5} {
		ok, err := func() (bool, error) {
			p, err := NewMulProblem(env, F16, n, uint64(40+n%97), 0)
			if err != nil {
				return false, err
			}
			defer p.Free()
			run := p.mineLaunch(k)
			c, err := p.checkRun(run)
			if err != nil {
				r.Reason = fmt.Sprintf("Your kernel failed to run on n = %d: %v", n, err)
				return false, nil
			}
			r.Checks = append(r.Checks, fmt.Sprintf("n = %d: %s", n, c))
			if !c.OK {
				r.Reason = fmt.Sprintf("Not yet: on n = %d, %v", n, c.Err())
				return false, nil
			}
			if n != MulN+5 {
				return true, nil
			}
			base, _, _, err := p.Launcher(MulSteps[0], "")
			if err != nil {
				return false, err
			}
			r.RefName = "the naive half kernel (step 1)"
			r.Mine, r.Ref, err = timeAgainst(env, run, base)
			return err == nil, err
		}()
		if !ok {
			return r, err
		}
	}
	r.Passed = true
	r.Reason = "Correct on every size checked, tails included."
	return r, nil
}

// mineLaunch is how exercise 1's check launches the reader's kernel k on p: the packed template's
// grid (one thread per 8 halves, at most 32 waves of blocks of 256).
func (p *MulProblem) mineLaunch(k *gpu.Kernel) func() error {
	cfg := gpu.Config{Grid: gpu.D1(NumBlocks(p.env.Session.Device, gpu.CeilDiv(p.N, 8))), Block: gpu.D1(Block)}
	return func() error { return k.Launch(cfg, p.X, p.Y, p.Z, int64(p.N)) }
}

// mineLaunch is how exercise 2's check launches the reader's backward kernel k on p: one thread per
// input element (at most 32 waves of blocks of 256), dy into dx.
func (p *UpProblem) mineLaunch(k *gpu.Kernel) func() error {
	in := p.Shape[0] * p.Shape[1] * p.Shape[2] * p.Shape[3]
	cfg := gpu.Config{Grid: gpu.D1(NumBlocks(p.env.Session.Device, in)), Block: gpu.D1(Block)}
	return func() error { return k.Launch(cfg, p.DY, p.DX, int32(in), int32(p.Shape[2]), int32(p.Shape[3])) }
}

// timeAgainst times the reader's kernel and the baseline by the bench's method, in the same run.
func timeAgainst(env *lab.Env, mine, base func() error) (bench.Timing, bench.Timing, error) {
	t, err := env.Bench.Time(mine)
	if err != nil {
		return t, bench.Timing{}, err
	}
	tb, err := env.Bench.Time(base)
	return t, tb, err
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

// checkExercise2 wants no 2-byte global loads in the PTX (dy read as __half2), then (GPU) checks
// (2,3,7,9), (1,1,1,1) and the article's shape and times the last against the generic kernel.
func checkExercise2(env *lab.Env, code string) (lab.ExerciseResult, error) {
	x := lab.Exercise{Number: 2, Kernel: "up2x_bwd_mine"} // Exercise2's name
	prog, a, r, err := buildExercise(env, x, code)
	if prog == nil {
		return r, err
	}
	if n := count(a.loads, 2); n > 0 || widest(a.loads) < 4 {
		r.Reason = fmt.Sprintf("Not yet: %s still reads 2 bytes at a time (%d of its %d global loads move 2 bytes, from its PTX); "+
			"the exercise is two __half2 loads (4 bytes each) per input element.", x.Kernel, n, len(a.loads))
		return r, nil
	}
	if !env.GPU() {
		return notRun(env, x, prog, r, "reads dy 4 bytes at a time"), nil
	}
	k, err := prog.Kernel(x.Kernel)
	if err != nil {
		return r, err
	}
	r.Ran = true
	for _, shape := range [][4]int{{2, 3, 7, 9}, {1, 1, 1, 1}, ArticleShape} {
		ok, err := func() (bool, error) {
			p, err := NewUpProblem(env, F16, shape, 77, 0)
			if err != nil {
				return false, err
			}
			defer p.Free()
			run := p.mineLaunch(k)
			c, err := p.checkRun(Backward, run)
			if err != nil {
				r.Reason = fmt.Sprintf("Your kernel failed to run on %s: %v", fmtShape(shape), err)
				return false, nil
			}
			r.Checks = append(r.Checks, fmt.Sprintf("%s: %s", fmtShape(shape), c))
			if !c.OK {
				r.Reason = fmt.Sprintf("Not yet: on %s, %v", fmtShape(shape), c.Err())
				return false, nil
			}
			if shape != ArticleShape {
				return true, nil
			}
			base, _, _, err := p.Launcher(UpSteps[0], Backward, "")
			if err != nil {
				return false, err
			}
			r.RefName = "the generic backward kernel (step 1)"
			r.Mine, r.Ref, err = timeAgainst(env, run, base)
			return err == nil, err
		}()
		if !ok {
			return r, err
		}
	}
	r.Passed = true
	r.Reason = "Correct on every shape checked, odd H and W included."
	return r, nil
}

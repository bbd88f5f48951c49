package matmul

import (
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	km "github.com/cudalessons/cudalessons/kernels/matmul"
)

// Exercises are the lesson's exercises (helpers/lab's contract: a notebook cell, the tests and the
// grader run the same Check).
var Exercises = []lab.Exercise{Exercise1, Exercise2}

// Ex1Step is how exercise 1's kernel is launched: like step 5 (block 256, a 128 x 128 tile per block).
var Ex1Step = Step{Name: "exercise 1", File: "ex1_blocktile_2d.cu", Kernel: "ex1_blocktile_2d", DType: "float32",
	Idea: "your 2D register blocking", Plan: tiled("exercise 1", 128, 128, 8, 256)}

// Ex1MinShared is the shared memory exercise 1 must stage: a 128 x 8 tile of A and an 8 x 128 tile of B.
const Ex1MinShared = 4 * (128*8 + 8*128)

// Exercise1 asks for step 5: 8 x 8 outputs per thread from shared-memory tiles.
var Exercise1 = lab.Exercise{
	Number: 1,
	Title:  "Exercise 1: 2D register blocking",
	Task: "Write `ex1_blocktile_2d`: a block of 256 threads computes a 128 x 128 tile of C, each thread an 8 x 8 block of it. " +
		"Walk along K in steps of 8: stage the 128 x 8 tile of A and the 8 x 128 tile of B in `__shared__` arrays (4 elements of each per thread), " +
		"`__syncthreads()`, then for each of the 8 k load 8 values of A and 8 of B into registers and do the 64 multiply-adds of their outer product. " +
		"Launch: grid (N/128, M/128), block 256; M and N multiples of 128, K of 8. The starter is correct but reads everything from global memory: " +
		"the check wants both tiles in shared memory (at least 8 KiB), then checks your kernel against float64 on three shapes and times it against step 5.",
	Kernel: "ex1_blocktile_2d",
	Starter: `// Correct, but every operand comes from global memory: no tile is staged in shared memory.
extern "C" __global__ void ex1_blocktile_2d(const float *__restrict__ A, const float *__restrict__ B,
                                            float *__restrict__ C, int M, int N, int K) {
    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * 128 + (tid / 16) * 8, col0 = blockIdx.x * 128 + (tid % 16) * 8;
    float acc[8][8] = {{0.0f}};
    for (int k = 0; k < K; ++k)
        for (int i = 0; i < 8; ++i)
            for (int j = 0; j < 8; ++j) acc[i][j] += A[(row0 + i) * K + k] * B[k * N + col0 + j];
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j) C[(row0 + i) * N + col0 + j] = acc[i][j];
}
`,
	Solution: func() (string, error) { return solution("solutions/ex1_blocktile_2d.cu") },
	Check:    checkEx1,
}

// Exercise2 asks for the split: hi and lo parts of each float.
var Exercise2 = lab.Exercise{
	Number: 2,
	Title:  "Exercise 2: split a float into two halves",
	Task: "Write `ex2_split(const float *x, __half *hi, __half *lo, long long n)`: for every i < n (grid-stride loop), " +
		"`hi[i]` is x rounded to fp16 and `lo[i]` is what is left, `x - hi`, scaled by 2^11 = 2048 and rounded to fp16 " +
		"(step 9 multiplies Ahi·Bhi + (Ahi·Blo + Alo·Bhi) / 2048). The starter leaves lo at zero: a plain fp16 product, 1e-3-level error. " +
		"The check splits A and B with your kernel, multiplies with step 9's product kernel, compares with float64 at the float32-accurate " +
		"tolerance on three shapes, and times your split + product against step 9's.",
	Kernel: "ex2_split",
	Starter: `#include <cuda_fp16.h>

extern "C" __global__ void ex2_split(const float *__restrict__ x, __half *__restrict__ hi, __half *__restrict__ lo,
                                     long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const float v = x[i];
        hi[i] = __float2half_rn(v);
        lo[i] = __float2half_rn(0.0f);  // TODO: the remainder x - hi, scaled by 2048
    }
}
`,
	Solution: func() (string, error) { return solution("solutions/ex2_split.cu") },
	Check:    checkEx2,
}

func solution(file string) (string, error) {
	src, err := km.Source(file)
	return src.Code, err
}

// ExerciseShapes are the shapes every exercise is checked on besides the article's (every output).
var ExerciseShapes = []Shape{{M: 128, N: 128, K: 32}, {M: 256, N: 384, K: 96}}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// exerciseShapes runs body on each exercise shape and the article's (sampled), stopping at the
// first failure; body returns the check result and, at the article's shape, the two timings.
func exerciseShapes(env *lab.Env, r *lab.ExerciseResult, body func(p *Problem, timed bool) (check.Result, error)) error {
	for i, s := range append(append([]Shape{}, ExerciseShapes...), Article) {
		p, err := NewCheckedProblem(env, s, uint64(500+i))
		if err != nil {
			return err
		}
		res, err := body(p, s == Article)
		what := p.Sample.What
		p.Free()
		if err != nil {
			r.Reason = "Your kernel failed to run: " + firstLine(err)
			return nil
		}
		r.Checks = append(r.Checks, fmt.Sprintf("%v (%s): %s", s, what, res))
		if !res.OK {
			r.Reason = fmt.Sprintf("Not yet: on %v, %v", s, res.Err())
			return nil
		}
	}
	r.Passed = true
	r.Reason = "Correct on every shape."
	return nil
}

func checkEx1(env *lab.Env, code string) (lab.ExerciseResult, error) {
	r := lab.ExerciseResult{RefName: Steps[4].Name}
	if !strings.Contains(code, Ex1Step.Kernel) {
		r.Reason = fmt.Sprintf("The kernel must be called %s (extern \"C\").", Ex1Step.Kernel)
		return r, nil
	}
	prog, err := build(env, Ex1Step, code)
	if err != nil {
		r.Reason = "It does not compile: " + firstLine(err)
		return r, nil
	}
	r.Compiled = true
	r.Report = prog.Report(Ex1Step.Kernel, 256, 0)
	if r.Report.StaticSharedBytes < Ex1MinShared {
		r.Reason = fmt.Sprintf("Not yet: %s stages %d bytes in shared memory; the tiles of A and B need %d (128 x 8 + 8 x 128 floats).",
			Ex1Step.Kernel, r.Report.StaticSharedBytes, Ex1MinShared)
		return r, nil
	}
	if !env.GPU() {
		r.Reason = fmt.Sprintf("%s compiled for %s with %d bytes of shared memory. Checking and timing it needs a GPU (%s).",
			Ex1Step.Kernel, prog.Compiled.Arch, r.Report.StaticSharedBytes, env.Mode)
		r.Passed = true // all that is decided without a GPU (lab.ExerciseResult: Ran stays false)
		return r, nil
	}
	r.Ran = true
	err = exerciseShapes(env, &r, func(p *Problem, timed bool) (check.Result, error) {
		res, err := p.Check(Ex1Step, code)
		if err != nil || !res.OK || !timed {
			return res, err
		}
		if r.Mine, err = timeStep(p, Ex1Step, code); err == nil {
			r.Ref, err = timeStep(p, Steps[4], "")
		}
		return res, err
	})
	return r, err
}

func timeStep(p *Problem, st Step, code string) (bench.Timing, error) {
	run, _, _, err := p.Launcher(st, code)
	if err != nil {
		return bench.Timing{}, err
	}
	return p.env.Bench.Time(run)
}

// splitStep is step 9 as exercise 2 uses it: the reader's split, then step 9's product.
var splitStep = Steps[len(Steps)-1]

func checkEx2(env *lab.Env, code string) (lab.ExerciseResult, error) {
	r := lab.ExerciseResult{RefName: splitStep.Name}
	if !strings.Contains(code, "ex2_split") {
		r.Reason = "The kernel must be called ex2_split (extern \"C\")."
		return r, nil
	}
	prog, err := env.BuildWith(compile.Source{Name: "my_ex2_split.cu", Code: code}, compile.Options{}, "ex2_split")
	if err != nil {
		r.Reason = "It does not compile: " + firstLine(err)
		return r, nil
	}
	r.Compiled = true
	r.Report = prog.Report("ex2_split", SplitBlock, 0)
	if !env.GPU() {
		r.Reason = fmt.Sprintf("ex2_split compiled for %s. Checking and timing it needs a GPU (%s).", prog.Compiled.Arch, env.Mode)
		if err := Refusal(splitStep, env.Device()); err != nil {
			r.Reason += " On this GPU its check would not run either: " + err.Error() + "."
		}
		r.Passed = true // all that is decided without a GPU (lab.ExerciseResult: Ran stays false)
		return r, nil
	}
	if err := Refusal(splitStep, env.Device()); err != nil {
		// The check multiplies the halves with step 9's product, which this GPU cannot run: what is
		// decided (it compiles) is all there is, as in the no-GPU mode, and the reason says why.
		r.Reason = fmt.Sprintf("ex2_split compiled for %s, but its check needs step %s, which is refused on this GPU: %v.", prog.Compiled.Arch, splitStep.Name, err)
		r.Passed = true
		return r, nil
	}
	split, err := prog.Kernel("ex2_split")
	if err != nil {
		return r, err
	}
	r.Ran = true
	err = exerciseShapes(env, &r, func(p *Problem, timed bool) (check.Result, error) {
		run, res, err := p.checkSplit(split)
		if err != nil || !res.OK || !timed {
			return res, err
		}
		if r.Mine, err = p.env.Bench.Time(run); err == nil {
			r.Ref, err = timeStep(p, splitStep, "")
		}
		return res, err
	})
	return r, err
}

// checkSplit is exercise 2's check on p's shape: step 9 with its split kernel replaced by split,
// run once on a NaN-poisoned output and compared with the float64 reference at step 9's tolerance.
// It returns the run too, for timing.
func (p *Problem) checkSplit(split *gpu.Kernel) (func() error, check.Result, error) {
	run, err := p.splitLauncher(split)
	if err != nil {
		return nil, check.Result{}, err
	}
	got, err := p.Output(run)
	if err != nil {
		return run, check.Result{}, err
	}
	return run, check.Compare(got, p.want, splitStep.Tol(p.Shape.K)), nil
}

// splitLauncher is step 9 with its split kernel replaced by split (same parameters).
func (p *Problem) splitLauncher(split *gpu.Kernel) (func() error, error) {
	d := p.env.Session.Device
	cfg, err := splitStep.Plan(p.Shape, d)
	if err != nil {
		return nil, err
	}
	prog, err := build(p.env, splitStep, "")
	if err != nil {
		return nil, err
	}
	k, err := prog.Kernel(splitStep.Kernel)
	if err != nil {
		return nil, err
	}
	if err := p.splitBuffers(); err != nil {
		return nil, err
	}
	s, h := p.Shape, p.halves
	na, nb := s.M*s.K, s.K*s.N
	ca := gpu.Config{Grid: gpu.D1(gpu.WavesGrid(d, na, SplitBlock, SplitWaves)), Block: gpu.D1(SplitBlock)}
	cb := gpu.Config{Grid: gpu.D1(gpu.WavesGrid(d, nb, SplitBlock, SplitWaves)), Block: gpu.D1(SplitBlock)}
	return func() error {
		if err := split.Launch(ca, p.Ad, h[0], h[1], int64(na)); err != nil {
			return err
		}
		if err := split.Launch(cb, p.Bd, h[2], h[3], int64(nb)); err != nil {
			return err
		}
		return k.Launch(cfg, h[0], h[1], h[2], h[3], p.Cd, int32(s.M), int32(s.N), int32(s.K))
	}, nil
}

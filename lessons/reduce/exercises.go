package reduce

import (
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/lab"
	kr "github.com/cudalessons/cudalessons/kernels/reduce"
)

// exerciseShapes are the shapes every exercise kernel is checked on: one element, odd lengths,
// lengths off every vector and warp width, a block's worth and more, and the article's shape.
var exerciseShapes = [][2]int{{1, 1}, {3, 1}, {5, 37}, {7, 1000}, {2, 4099}, {64, 65536}, {SoftmaxRows, SoftmaxCols}}

// Exercises are the lesson's exercises.
var Exercises = []lab.Exercise{
	{
		Number: 1, Title: "Exercise 1: reduce with warp shuffles", Kernel: "softmax_ex1", Notebook: SoftmaxNotebook,
		Task: "`softmax_ex1` is step 2: a block of 256 threads per row, whose maximum and sum go through a 256-float shared-memory tree " +
			"with a barrier per level. Rewrite `block_max` and `block_sum` with `__shfl_xor_sync`: reduce inside each warp (5 shuffles), " +
			"put one value per warp in shared memory (at most 32 floats), one barrier, and reduce those values with shuffles again. " +
			"The check looks for shuffles in the PTX and at most 128 bytes of shared memory, runs the kernel (grid rows, block 256) on " +
			"rows of 1 to 65536 elements against the float64 softmax, and times it against step 2 at (4096, 65536).",
		Starter:  mustSource("s2_block_tree.cu", "softmax_block_tree", "softmax_ex1"),
		Solution: func() (string, error) { s, err := kr.Source("solutions/ex1_warp_reduce.cu"); return s.Code, err },
		Check: func(env *lab.Env, code string) (lab.ExerciseResult, error) {
			return checkExercise(env, 1, code, "softmax_ex1", true)
		},
	},
	{
		Number: 2, Title: "Exercise 2: the online softmax update", Kernel: "softmax_ex2", Notebook: SoftmaxNotebook,
		Task: "`softmax_ex2` finds each row's maximum and sum in ONE pass: every thread folds its values into a running pair (m, s), " +
			"the sum of exp(x - m) over the values seen so far, and the pairs of all threads are merged with shuffles and shared memory. " +
			"Its `merge` is wrong: it adds two sums taken relative to different maxima. Fix `merge` so that the pair of the union " +
			"is (max(ma, mb), sa exp(ma - m) + sb exp(mb - m)), and mind two empty pairs (both maxima -inf). The check runs the kernel " +
			"(grid rows, block 256) on rows of 1 to 65536 elements and times it against step 3 (three passes) at (4096, 65536).",
		Starter: ex2Starter,
		Solution: func() (string, error) {
			s, err := kr.Source("solutions/ex2_online.cu")
			return s.Code, err
		},
		Check: func(env *lab.Env, code string) (lab.ExerciseResult, error) {
			return checkExercise(env, 2, code, "softmax_ex2", false)
		},
	},
	{
		Number: 3, Title: "Exercise 3: Chan's merge of two Welford triples", Kernel: "ln_welford_partials", Notebook: LayerNormNotebook,
		Task: "The cell holds layer norm step 3 (`l3_welford.cu`) with its `chan` broken: merging two triples (count, mean, M2) it adds the two M2s " +
			"and forgets that the two parts' means differ. Fix `chan` so that the merged M2 also counts the spread between the two means: " +
			"M2 = M2a + M2b + d² · na · nb / n, with d = mean_b − mean_a (Chan, Golub and LeVeque). Every merge of the step goes through it: " +
			"a float4 into a thread's triple, the lanes' shuffles, the warps, and the finalize kernel's partial triples. The check runs the " +
			"three kernels as step 3 launches them on samples of 1 to 70000 values (float4 and single floats, a misaligned view) and at the " +
			"article's shape, plain and with mean 1000 and standard deviation 0.1, against the float64 layer norm on NaN-poisoned outputs, " +
			"and times them against step 3 at (16, 4194304).",
		Starter:  mustEdit(LNSteps[2].File, chanMerge, chanStarter),
		Solution: func() (string, error) { s, err := kr.Source(LNSteps[2].File); return s.Code, err },
		Check:    checkChanExercise,
	},
}

// chanMerge is the line of step 3's chan that exercise 3 breaks, and chanStarter the broken line.
const (
	chanMerge   = "    return Welford{n, a.mean + d * f, a.m2 + b.m2 + d * d * a.n * f};"
	chanStarter = "    // TODO: the two parts' means differ: their spread adds d^2 * na * nb / n to M2 (f is nb / n).\n" +
		"    return Welford{n, a.mean + d * f, a.m2 + b.m2};"
)

// mustEdit is a step's file with from replaced by to: an exercise that starts from a step. from
// must be in the file.
func mustEdit(file, from, to string) string {
	src, err := kr.Source(file)
	if err != nil || !strings.Contains(src.Code, from) {
		panic(fmt.Sprintf("%s: no %q to edit (%v)", file, from, err)) // an embedded file: only if the build is broken
	}
	return strings.Replace(src.Code, from, to, 1)
}

// chanShapes are the samples exercise 3 is checked on (N, M, offset, shifted): one value, lengths
// off the float4 width, a misaligned view, more than a block's part, and the article's shape plain
// and with mean 1000 (where a merge that drops the means' spread, or the sum of squares, fails).
var chanShapes = []struct {
	n, m, offset int
	shifted      bool
}{{1, 1, 0, false}, {3, 7, 0, false}, {2, 1000, 0, false}, {5, 4099, 0, false}, {4, 4100, 1, false}, {3, 65536, 0, false},
	{2, 70000, 0, false}, {LNSamples, LNSize, 0, true}, {LNSamples, LNSize, 0, false}}

// checkChanExercise is exercise 3's check: the reader's l3_welford.cu run as step 3 on chanShapes
// against the float64 layer norm, then timed against step 3 at the article's shape (the last one).
func checkChanExercise(env *lab.Env, code string) (lab.ExerciseResult, error) {
	const kernel = "ln_welford_partials"
	prog, r, err := env.BuildExercise(lab.Exercise{Number: 3, Kernel: kernel}, code)
	if prog == nil || err != nil {
		return r, err
	}
	r.Report = prog.Report(kernel, 256, 0)
	if !env.GPU() {
		r.Reason = fmt.Sprintf("%s compiled for %s. Checking and timing it needs a GPU (%s).", kernel, prog.Compiled.Arch, env.Mode)
		r.Passed = true // all that is decided without a GPU (lab.ExerciseResult: Ran stays false)
		return r, nil
	}
	r.Ran = true
	s := LNSteps[2]
	for i, sh := range chanShapes {
		p, err := NewLNProblem(env, sh.n, sh.m, uint64(600+i), sh.shifted, false, sh.offset)
		if err != nil {
			return r, err
		}
		label := fmt.Sprintf("(%d, %d)", sh.n, sh.m)
		if sh.offset > 0 {
			label += " misaligned view"
		}
		if sh.shifted {
			label += " mean 1000, std 0.1"
		}
		res, _, err := p.Check(s, code)
		if err == nil && res.OK && i == len(chanShapes)-1 {
			var mine, base func() error
			if mine, _, err = p.Launcher(s, code); err == nil {
				if base, _, err = p.Launcher(s, ""); err == nil {
					r.RefName = "step " + s.Name
					r.Mine, r.Ref, err = timePair(env, mine, base)
				}
			}
		}
		checked := p.Checked()
		p.Free()
		switch {
		case err != nil:
			r.Reason = "Your kernel failed to run: " + err.Error()
			return r, nil
		case !res.OK:
			r.Checks = append(r.Checks, fmt.Sprintf("%s (%s): %s", label, checked, res))
			r.Reason = fmt.Sprintf("Not yet: on %s, %v", label, res.Err())
			return r, nil
		}
		r.Checks = append(r.Checks, fmt.Sprintf("%s (%s): %s", label, checked, res))
	}
	r.Passed = true
	r.Reason = "Correct on every shape."
	return r, nil
}

// mustSource is a step's file with its kernel renamed: the exercise starts from the step.
func mustSource(file, from, to string) string {
	src, err := kr.Source(file)
	if err != nil {
		panic(err) // an embedded file: missing only if the build is broken
	}
	return strings.Replace(src.Code, from, to, 1)
}

const ex2Starter = `// Exercise 2: one pass for the maximum and the sum. Fix merge().
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#define THREADS 256
#define WARPS (THREADS / 32)

struct MS {
    float m, s;  // the largest value seen, and the sum of exp(x - m) over the values seen
};

// merge returns the pair of the union of the values of a and b.
// TODO: a.s and b.s are sums relative to a.m and b.m: rescale each to the new maximum first.
__device__ MS merge(MS a, MS b) {
    return MS{fmaxf(a.m, b.m), a.s + b.s};
}

extern "C" __global__ void __launch_bounds__(THREADS) softmax_ex2(const float *__restrict__ x, float *__restrict__ y, int rows, int cols) {
    __shared__ MS sh[WARPS];
    const float *xr = x + (long long)blockIdx.x * cols;
    float *yr = y + (long long)blockIdx.x * cols;
    MS p{-INFINITY, 0.f};
    for (int j = threadIdx.x; j < cols; j += THREADS) p = merge(p, MS{xr[j], 1.f});  // one value: (x, exp(0))
    for (int o = 16; o > 0; o >>= 1) p = merge(p, MS{__shfl_xor_sync(0xffffffffu, p.m, o), __shfl_xor_sync(0xffffffffu, p.s, o)});
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = p;
    __syncthreads();
    p = threadIdx.x % 32 < WARPS ? sh[threadIdx.x % 32] : MS{-INFINITY, 0.f};
    for (int o = 16; o > 0; o >>= 1) p = merge(p, MS{__shfl_xor_sync(0xffffffffu, p.m, o), __shfl_xor_sync(0xffffffffu, p.s, o)});
    const float inv = 1.f / p.s;
    for (int j = threadIdx.x; j < cols; j += THREADS) yr[j] = expf(xr[j] - p.m) * inv;
}
`

// exerciseStep is the launch every exercise kernel gets: a block of 256 threads per row.
func exerciseStep(kernel string) SoftmaxStep {
	return SoftmaxStep{Name: kernel, File: kernel + ".cu", DTypes: []DType{F32},
		Plan: func(in SoftmaxInput) (SoftmaxLaunch, error) {
			return SoftmaxLaunch{Kernel: kernel, Grid: in.Rows, Block: 256, Vec: -1}, nil
		}}
}

func checkExercise(env *lab.Env, n int, code, kernel string, needShuffles bool) (lab.ExerciseResult, error) {
	prog, r, err := env.BuildExercise(lab.Exercise{Number: n, Kernel: kernel}, code)
	if prog == nil || err != nil {
		return r, err
	}
	r.Report = prog.Report(kernel, 256, 0)
	if needShuffles {
		shared := r.Report.StaticSharedBytes
		if !strings.Contains(prog.Compiled.PTX, "shfl.sync") || shared > 128 {
			r.Reason = fmt.Sprintf("Not yet: the PTX has no shfl.sync, or the kernel declares %d bytes of shared memory (at most 128: one float per warp); reduce inside warps with __shfl_xor_sync.", shared)
			return r, nil
		}
	}
	if !env.GPU() {
		r.Reason = fmt.Sprintf("%s compiled for %s. Checking and timing it needs a GPU (%s).", kernel, prog.Compiled.Arch, env.Mode)
		r.Passed = true // all that is decided without a GPU (lab.ExerciseResult: Ran stays false)
		return r, nil
	}
	r.Ran = true
	step := exerciseStep(kernel)
	for i, sh := range exerciseShapes {
		p, err := NewSoftmaxProblem(env, F32, sh[0], sh[1], uint64(500+i), 0)
		if err != nil {
			return r, err
		}
		run, _, _, err := p.Launcher(step, code)
		var res fmt.Stringer
		ok := false
		if err == nil {
			c, cerr := p.CheckRun(run)
			err, res, ok = cerr, c, c.OK
			if err == nil && !ok {
				r.Checks = append(r.Checks, fmt.Sprintf("%s (%s): %s", shape(sh[0], sh[1]), p.Checked(), c))
				r.Reason = fmt.Sprintf("Not yet: on %s, %v", shape(sh[0], sh[1]), c.Err())
				p.Free()
				return r, nil
			}
		}
		if err == nil && sh == exerciseShapes[len(exerciseShapes)-1] {
			ref := SoftmaxSteps[1]
			if n == 2 {
				ref = SoftmaxSteps[2]
			}
			var base func() error
			if base, _, _, err = p.Launcher(ref, ""); err == nil {
				r.RefName = "step " + ref.Name
				r.Mine, r.Ref, err = timePair(env, run, base)
			}
		}
		checked := p.Checked()
		p.Free()
		if err != nil {
			r.Reason = "Your kernel failed to run: " + err.Error()
			return r, nil
		}
		r.Checks = append(r.Checks, fmt.Sprintf("%s (%s): %s", shape(sh[0], sh[1]), checked, res))
	}
	r.Passed = true
	r.Reason = "Correct on every shape."
	return r, nil
}

// timePair times a reader's kernel and the lesson's step by the bench's method, in the same run.
func timePair(env *lab.Env, mine, ref func() error) (bench.Timing, bench.Timing, error) {
	a, err := env.Bench.Time(mine)
	if err != nil {
		return a, bench.Timing{}, err
	}
	b, err := env.Bench.Time(ref)
	return a, b, err
}

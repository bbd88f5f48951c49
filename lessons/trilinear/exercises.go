package trilinear

import (
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	kt "github.com/cudalessons/cudalessons/kernels/trilinear"
)

// Starter1 is exercise 1's starting point: the article's arithmetic on a flat launch, with the
// mapping from the thread index to (n, f) left to write.
const Starter1 = `// One thread per output element: i runs over the N*F outputs.
extern "C" __global__ void ex1_coalesced(const float *__restrict__ feats, const float *__restrict__ points,
                                         float *__restrict__ out, int N, int F) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)N * F) return;
    // TODO: the point n and the feature f of output i, so that consecutive threads
    // (consecutive i) read consecutive features.
    const long long n = 0, f = 0;
    const float u = (points[n * 3 + 0] + 1.f) * 0.5f;
    const float v = (points[n * 3 + 1] + 1.f) * 0.5f;
    const float w = (points[n * 3 + 2] + 1.f) * 0.5f;
    const float a = (1.f - v) * (1.f - w), b = (1.f - v) * w, c = v * (1.f - w), d = v * w;
    const float *x = feats + n * 8 * F + f;  // feats[n][k][f] = x[k * F]
    out[n * F + f] = (1.f - u) * (a * x[0] + b * x[(long long)F] + c * x[2LL * F] + d * x[3LL * F]) +
                     u * (a * x[4LL * F] + b * x[5LL * F] + c * x[6LL * F] + d * x[7LL * F]);
}
`

// Starter2 is exercise 2's starting point: each lane sums its features' share; the reduction over
// the warp is missing.
const Starter2 = `// One warp per point: lane l takes features l, l+32, ...
extern "C" __global__ void ex2_dpoints(const float *__restrict__ feats, const float *__restrict__ points,
                                       const float *__restrict__ g, float *__restrict__ dpoints, int N, int F) {
    const long long n = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (n >= N) return;
    const int lane = threadIdx.x % 32;
    const float u = (points[n * 3 + 0] + 1.f) * 0.5f;
    const float v = (points[n * 3 + 1] + 1.f) * 0.5f;
    const float w = (points[n * 3 + 2] + 1.f) * 0.5f;
    const float a = (1.f - v) * (1.f - w), b = (1.f - v) * w, c = v * (1.f - w), d = v * w;
    float du = 0.f, dv = 0.f, dw = 0.f;
    for (int f = lane; f < F; f += 32) {
        const float *x = feats + n * 8 * F + f;
        float q[8];
        for (int k = 0; k < 8; ++k) q[k] = x[k * (long long)F];
        const float gv = g[n * F + f];
        du += gv * ((a * q[4] + b * q[5] + c * q[6] + d * q[7]) - (a * q[0] + b * q[1] + c * q[2] + d * q[3]));
        // TODO: dv and dw, the derivatives of out along v and w (see the formulas above).
    }
    // TODO: add du, dv, dw over the 32 lanes of the warp.
    if (lane == 0) {
        dpoints[n * 3 + 0] = 0.5f * du;
        dpoints[n * 3 + 1] = 0.5f * dv;
        dpoints[n * 3 + 2] = 0.5f * dw;
    }
}
`

// exShapes are the shapes an exercise is checked on (every output), before the article's shape
// (sampled points).
var exShapes = []Shape{{1, 1}, {3, 5}, {9, 33}, {1000, 37}}

// exArticle says whether the exercise checks run (and time) the article's shape; the tests turn it
// off in -short mode, which the sanitizer runs.
var exArticle = true

// Exercises are the lesson's exercises.
var Exercises = []lab.Exercise{
	{Number: 1, Title: "Exercise 1: coalesce the article's kernel", Kernel: "ex1_coalesced",
		Task: "The article's kernel puts consecutive threads on consecutive POINTS, 8F floats apart. Write `ex1_coalesced`: it is launched " +
			"with one thread per output element (grid ceil(N*F/256) blocks of 256); pick the point n and feature f of thread i so that " +
			"consecutive threads read consecutive features. The check runs it on NaN-poisoned outputs against the float64 reference on " +
			"(N, F) = (1,1), (3,5), (9,33), (1000,37) and the article's shape, and passes it when it is correct everywhere and faster than the article's kernel at the article's shape.",
		Starter:  Starter1,
		Solution: kt.Kernels.CodeOf("solutions/ex1_coalesced.cu"),
		Check:    checkExercise1},
	{Number: 2, Title: "Exercise 2: the gradient of the points", Kernel: "ex2_dpoints",
		Task: "Finish `ex2_dpoints`, dL/dpoints for the upstream gradient g (points inside [-1, 1], no clamping needed): one warp per point " +
			"(blocks of 256 = 8 points, grid ceil(N/8)), each lane sums its features' terms g * d out/d(u,v,w), then the warp adds the three sums " +
			"(`__shfl_down_sync` or `__shfl_xor_sync`, five halvings) and lane 0 writes 1/2 of each. " +
			"d out/dv = (1-u)((1-w)(f2-f0) + w(f3-f1)) + u((1-w)(f6-f4) + w(f7-f5)); d out/dw = (1-u)((1-v)(f1-f0) + v(f3-f2)) + u((1-v)(f5-f4) + v(f7-f6)). " +
			"The check runs it on the same shapes as exercise 1 and times it against step 6.",
		Starter:  Starter2,
		Solution: kt.Kernels.CodeOf("solutions/ex2_dpoints.cu"),
		Check:    checkExercise2},
}

// buildExercise compiles the reader's code as every exercise does (lab.BuildExercise: a compile
// error or a missing kernel is a failed result, not an error) and adds its compile report.
func buildExercise(env *lab.Env, x lab.Exercise, code string, block int) (*lab.Program, lab.ExerciseResult, error) {
	prog, r, err := env.BuildExercise(x, code)
	if prog == nil || err != nil {
		return nil, r, err
	}
	r.Report = prog.Report(x.Kernel, block, 0)
	return prog, r, nil
}

// checkShapes runs the reader's kernel on every exercise shape and the article's, with the step's
// arguments and checks, and times it against ref at the article's shape.
func checkShapes(env *lab.Env, k *gpu.Kernel, st, ref Step, r *lab.ExerciseResult, cfg func(Shape) gpu.Config) error {
	shapes := append([]Shape{}, exShapes...)
	if exArticle {
		shapes = append(shapes, ArticleShape)
	}
	for i, s := range shapes {
		rows := 0
		if s == ArticleShape {
			rows = 2048
		}
		stop, err := func() (bool, error) {
			p, err := NewProblem(env, s, uint64(500+i), -1, 1, rows, 0)
			if err != nil {
				return true, err
			}
			defer p.Free()
			args, _, err := p.args(st)
			if err != nil {
				return true, err
			}
			run := func() error { return k.Launch(cfg(s), args...) }
			res, _, err := p.CheckRun(st, run, Launch{})
			if err != nil {
				r.Reason = fmt.Sprintf("Your kernel failed to run on %v: %v", s, err)
				return true, nil
			}
			r.Checks = append(r.Checks, fmt.Sprintf("%v (%s): %s", s, p.Checked(), res))
			if !res.OK() {
				r.Reason = fmt.Sprintf("Not yet: on %v, %v", s, res.Err())
				return true, nil
			}
			if s != ArticleShape {
				return false, nil
			}
			if r.Mine, err = env.Bench.Time(run); err != nil {
				return true, err
			}
			base, _, _, err := p.Launcher(ref, "")
			if err != nil {
				return true, err
			}
			if r.Ref, err = env.Bench.Time(base); err != nil {
				return true, err
			}
			r.RefName = ref.Name
			return false, nil
		}()
		if err != nil || stop {
			return err
		}
	}
	r.Passed = true
	return nil
}

func checkExercise1(env *lab.Env, code string) (lab.ExerciseResult, error) {
	x := lab.Exercise{Number: 1, Kernel: "ex1_coalesced"}
	prog, r, err := buildExercise(env, x, code, Block)
	if prog == nil || err != nil {
		return r, err
	}
	if !env.GPU() {
		r.Passed = true
		r.Reason = fmt.Sprintf("%s compiled for %s. Checking and timing it needs a GPU (%s).", x.Kernel, prog.Compiled.Arch, env.Mode)
		return r, nil
	}
	k, err := prog.Kernel(x.Kernel)
	if err != nil {
		return r, err
	}
	r.Ran = true
	cfg := func(s Shape) gpu.Config {
		return gpu.Config{Grid: gpu.D1(max(1, gpu.CeilDiv(s.N*s.F, Block))), Block: gpu.D1(Block)}
	}
	if err := checkShapes(env, k, mustStep("2 coalesced"), mustStep("1 article"), &r, cfg); err != nil || !r.Passed {
		return r, err
	}
	if exArticle && r.Speedup() <= 1 {
		r.Passed = false
		r.Reason = fmt.Sprintf("Correct on every shape, but not faster than the article's kernel at its shape (%.2fx): are consecutive threads on consecutive features?", r.Speedup())
		return r, nil
	}
	r.Reason = "Correct on every shape, and faster than the article's kernel."
	return r, nil
}

func checkExercise2(env *lab.Env, code string) (lab.ExerciseResult, error) {
	x := lab.Exercise{Number: 2, Kernel: "ex2_dpoints"}
	prog, r, err := buildExercise(env, x, code, Block)
	if prog == nil || err != nil {
		return r, err
	}
	ptx := prog.Compiled.PTX
	if !strings.Contains(ptx, "shfl.sync") && !strings.Contains(ptx, "atom.") && !strings.Contains(ptx, "red.") && !strings.Contains(ptx, "st.shared") {
		r.Reason = fmt.Sprintf("Not yet: %s has no reduction across the warp (its PTX has no shuffle, atomic or shared-memory store): each point's three sums are spread over 32 lanes.", x.Kernel)
		return r, nil
	}
	if !env.GPU() {
		r.Passed = true
		r.Reason = fmt.Sprintf("%s compiled for %s and reduces across the warp. Checking and timing it needs a GPU (%s).", x.Kernel, prog.Compiled.Arch, env.Mode)
		return r, nil
	}
	k, err := prog.Kernel(x.Kernel)
	if err != nil {
		return r, err
	}
	r.Ran = true
	cfg := func(s Shape) gpu.Config {
		return gpu.Config{Grid: gpu.D1(max(1, gpu.CeilDiv(s.N, Block/32))), Block: gpu.D1(Block)}
	}
	st := mustStep("6 backward points")
	if err := checkShapes(env, k, st, st, &r, cfg); err != nil || !r.Passed {
		return r, err
	}
	r.Reason = "Correct on every shape."
	return r, nil
}

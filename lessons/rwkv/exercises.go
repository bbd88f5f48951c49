package rwkv

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	kr "github.com/cudalessons/cudalessons/kernels/rwkv"
)

// Exercises are the notebook's exercises (Lesson.Exercises): each check compiles the reader's kernel,
// looks at its PTX for what the task asks (without a GPU), and on a GPU checks it on awkward shapes
// and the article's shape and times it against v0.
var Exercises = []lab.Exercise{
	exercise1.exercise(1, "Exercise 1: stage the rows in shared memory",
		"Starting from v0, make each block copy its w row and its k row into __shared__ arrays (one element per thread), "+
			"wait for the whole block, and run the loop on the shared copies. The kernel must be called ex1_shared and keep v0's "+
			"signature; it is launched like v0 (grid B*C, block T, T <= 1024).",
		`extern "C" __global__ void ex1_shared(const float *__restrict__ w, const float *__restrict__ k,
                                      float *__restrict__ out, float eps, int B, int C, int T) {
    // TODO: declare two __shared__ arrays of 1024 floats, fill them, and __syncthreads().
    const int row = blockIdx.x, t = threadIdx.x, c = row % C;
    if (t >= T) return;
    float s = eps;
    for (int u = 0; u <= t; ++u) s += w[c * T + (T - 1) - t + u] * k[row * T + u];
    out[row * T + t] = s;
}
`),
	exercise2.exercise(2, "Exercise 2: give every thread the same amount of work",
		"Thread t of v1 does t+1 products: the triangle leaves most threads idle while the last ones finish. Write ex2_pairs: "+
			"launched with block T/2, thread t computes output t AND output T-1-t (t+1 + T-t = T+1 products for every thread), "+
			"on shared-memory rows (stage them with a loop: there are only T/2 threads now). T is even and at most 1024.",
		`extern "C" __global__ void ex2_pairs(const float *__restrict__ w, const float *__restrict__ k,
                                     float *__restrict__ out, float eps, int B, int C, int T) {
    __shared__ float ws[1024], ks[1024];
    const int row = blockIdx.x, c = row % C;
    // TODO: stage ws and ks with a loop over i = threadIdx.x, i += blockDim.x, then __syncthreads().
    // TODO: compute outputs t = threadIdx.x and T-1-t (when t < T/2).
}
`),
}

// exerciseCheck is what an exercise's check needs: the launch the reader's kernel gets (a Step whose
// source is the reader's), its solution under kernels/rwkv, the awkward small shapes checked on
// every output besides the article's shape, and whether the task is to stage rows in shared memory.
type exerciseCheck struct {
	Step     Step
	Solution string
	Shapes   []Shape
	// NeedsShared: a correct kernel that declares no shared memory, or never waits for its block,
	// has not done the task (v0 renamed is correct, and must not pass).
	NeedsShared bool
}

var exercise1 = exerciseCheck{
	Step: Step{Name: "exercise 1", File: "ex1_shared.cu", Kernel: "ex1_shared", DType: "float32", Tol: check.FP32,
		Idea: "your shared-memory kernel", Plan: planV0},
	Solution:    "solutions/ex1_shared.cu",
	Shapes:      []Shape{{B: 3, C: 5, T: 37}, {B: 1, C: 2, T: 1}, {B: 2, C: 3, T: 1024}},
	NeedsShared: true,
}

var exercise2 = exerciseCheck{
	Step: Step{Name: "exercise 2", File: "ex2_pairs.cu", Kernel: "ex2_pairs", DType: "float32", Tol: check.FP32,
		Idea: "your balanced kernel",
		Plan: func(s Shape, d gpu.DeviceInfo) (Launch, error) {
			if err := needT("exercise 2", s, TMax, 2); err != nil {
				return Launch{}, err
			}
			return Launch{Config: gpu.Config{Grid: gpu.D1(s.B * s.C), Block: gpu.D1(s.T / 2)}}, nil
		}},
	Solution: "solutions/ex2_pairs.cu",
	Shapes:   []Shape{{B: 3, C: 5, T: 38}, {B: 1, C: 2, T: 2}, {B: 2, C: 3, T: 1024}},
}

// planV0 is v0's launch (Steps[0].Plan, looked up when called so the variables initialise in any order).
func planV0(s Shape, d gpu.DeviceInfo) (Launch, error) { return Steps[0].Plan(s, d) }

// exercise makes the lab.Exercise whose Check is x.check.
func (x exerciseCheck) exercise(n int, title, task, starter string) lab.Exercise {
	return lab.Exercise{Number: n, Title: title, Task: task, Kernel: x.Step.Kernel, Starter: starter,
		Solution: func() (string, error) {
			src, err := kr.Source(x.Solution)
			return src.Code, err
		},
		Check: func(env *lab.Env, code string) (lab.ExerciseResult, error) { return x.check(env, code) }}
}

// check compiles the reader's code; refuses it from its PTX when it stores nothing to global memory
// or (exercise 1) declares no shared memory or never waits for its block; in the GPU mode checks it
// against the float64 reference on every output of the small shapes and on 256 random rows of the
// article's shape (NaN-poisoned outputs, fresh random inputs), then times it against v0 at the
// article's shape. In the no-GPU mode it says that checking and timing need a GPU.
func (x exerciseCheck) check(env *lab.Env, code string) (lab.ExerciseResult, error) {
	st := x.Step
	prog, r, err := env.BuildExercise(lab.Exercise{Kernel: st.Kernel}, code)
	if prog == nil {
		return r, err
	}
	l, _ := st.Plan(ArticleShape, gpu.DeviceInfo{})
	r.Report = prog.Report(st.Kernel, l.Config.Block.Count(), l.Config.SharedBytes)
	ins, err := compile.Instructions(prog.Compiled.PTX, st.Kernel)
	if err != nil {
		return r, err
	}
	if reason := x.missing(ins, r.Report.StaticSharedBytes); reason != "" {
		r.Reason = "Not yet: " + reason
		return r, nil
	}
	if !env.GPU() {
		r.Passed = true
		r.Reason = fmt.Sprintf("%s compiled for %s (%d bytes of static shared memory). Checking and timing it needs a GPU (%s).",
			st.Kernel, prog.Compiled.Arch, r.Report.StaticSharedBytes, env.Mode)
		return r, nil
	}
	r.Ran = true
	shapes := append(append([]Shape{}, x.Shapes...), ArticleShape)
	for i, s := range shapes {
		rows := 0
		if s == ArticleShape {
			rows = 256
		}
		p, err := NewProblem(env, s, uint64(1000+i), rows)
		if err != nil {
			return r, err
		}
		res, err := p.Check(st, code)
		if err == nil && s == ArticleShape && res.OK {
			var run func() error
			if run, _, _, err = p.Launcher(st, code); err == nil {
				r.Mine, err = env.Bench.Time(run)
			}
			if err == nil {
				if run, _, _, err = p.Launcher(Steps[0], ""); err == nil {
					r.Ref, err = env.Bench.Time(run)
					r.RefName = "v0"
				}
			}
		}
		checked := p.Checked()
		p.Free()
		if err != nil {
			r.Reason = "Your kernel failed to run: " + err.Error()
			return r, nil
		}
		r.Checks = append(r.Checks, fmt.Sprintf("%v (%s): %s", s, checked, res))
		if !res.OK {
			r.Reason = fmt.Sprintf("Not yet: on %v, %v", s, res.Err())
			return r, nil
		}
	}
	r.Passed = true
	r.Reason = "Correct on every shape checked."
	return r, nil
}

// missing says what the task asks that the kernel's PTX shows it does not do, or "".
func (x exerciseCheck) missing(ins []compile.Instruction, sharedBytes int) string {
	var stores, barrier bool
	for _, in := range ins {
		stores = stores || in.Is("st.global")
		barrier = barrier || in.Is("bar.sync") || in.Is("barrier.sync")
	}
	k := x.Step.Kernel
	switch {
	case !stores:
		return fmt.Sprintf("%s stores nothing to global memory (no st.global in its PTX), so out is never written.", k)
	case x.NeedsShared && sharedBytes == 0:
		return fmt.Sprintf("%s declares no __shared__ memory that it uses (0 bytes of static shared memory in its compile report); the exercise is to stage the w and k rows there.", k)
	case x.NeedsShared && !barrier:
		return fmt.Sprintf("%s never waits for its block (no __syncthreads(), no bar.sync in its PTX): a thread could read a shared element before the thread that writes it has written it.", k)
	}
	return ""
}

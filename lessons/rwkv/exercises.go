package rwkv

import (
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
	kr "github.com/cudalessons/cudalessons/kernels/rwkv"
)

// Exercise is a kernel the reader writes in a notebook cell: the task, a starting point, the launch
// it gets (a Step whose source is the reader's), and a solution kept in kernels/rwkv/solutions.
type Exercise struct {
	Title    string
	Task     string
	Starter  string // CUDA source to start from
	Step     Step   // Kernel is the name the reader's kernel must have
	Solution string // file under kernels/rwkv
	// Shapes are the awkward small shapes checked on every output, besides the article's shape.
	Shapes []Shape
	// NeedsShared: the task is to stage data in shared memory, so a correct kernel that declares
	// none has not done it yet (v0 renamed is correct, and must not pass).
	NeedsShared bool
}

// Exercises are the notebook's exercises.
var Exercises = []Exercise{
	{
		Title: "Exercise 1: stage the rows in shared memory",
		Task: "Starting from v0, make each block copy its w row and its k row into __shared__ arrays (one element per thread), " +
			"wait for the whole block, and run the loop on the shared copies. The kernel must be called ex1_shared and keep v0's " +
			"signature; it is launched like v0 (grid B*C, block T, T <= 1024).",
		Starter: `extern "C" __global__ void ex1_shared(const float *__restrict__ w, const float *__restrict__ k,
                                      float *__restrict__ out, float eps, int B, int C, int T) {
    // TODO: declare two __shared__ arrays of 1024 floats, fill them, and __syncthreads().
    const int row = blockIdx.x, t = threadIdx.x, c = row % C;
    if (t >= T) return;
    float s = eps;
    for (int u = 0; u <= t; ++u) s += w[c * T + (T - 1) - t + u] * k[row * T + u];
    out[row * T + t] = s;
}
`,
		Step: Step{Name: "exercise 1", File: "ex1_shared.cu", Kernel: "ex1_shared", DType: "float32", Tol: check.FP32,
			Idea: "your shared-memory kernel", Plan: Steps[0].Plan},
		Solution:    "solutions/ex1_shared.cu",
		Shapes:      []Shape{{B: 3, C: 5, T: 37}, {B: 1, C: 2, T: 1}, {B: 2, C: 3, T: 1024}},
		NeedsShared: true,
	},
	{
		Title: "Exercise 2: give every thread the same amount of work",
		Task: "Thread t of v1 does t+1 products: the triangle leaves most threads idle while the last ones finish. Write ex2_pairs: " +
			"launched with block T/2, thread t computes output t AND output T-1-t (t+1 + T-t = T+1 products for every thread), " +
			"on shared-memory rows (stage them with a loop: there are only T/2 threads now). T is even and at most 1024.",
		Starter: `extern "C" __global__ void ex2_pairs(const float *__restrict__ w, const float *__restrict__ k,
                                     float *__restrict__ out, float eps, int B, int C, int T) {
    __shared__ float ws[1024], ks[1024];
    const int row = blockIdx.x, c = row % C;
    // TODO: stage ws and ks with a loop over i = threadIdx.x, i += blockDim.x, then __syncthreads().
    // TODO: compute outputs t = threadIdx.x and T-1-t (when t < T/2).
}
`,
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
	},
}

// SolutionSource returns the exercise's solution (kept out of the notebook).
func (e Exercise) SolutionSource() (string, error) {
	src, err := kr.Source(e.Solution)
	return src.Code, err
}

// ExerciseResult is the outcome of checking a reader's kernel.
type ExerciseResult struct {
	Compiled bool
	Report   record.KernelReport
	Checks   []string // one line per shape checked
	OK       bool     // compiled, and correct on every shape (GPU mode)
	Ran      bool     // it ran on a GPU (false in the no-GPU mode)
	Mine, V0 bench.Timing
	Message  string
}

// Show displays the result as notes.
func (r *ExerciseResult) Show() {
	for _, c := range r.Checks {
		show.Note(show.Info, c)
	}
	kind := show.Success
	switch {
	case !r.Ran:
		kind = show.Info
	case !r.OK:
		kind = show.Warning
	}
	show.Note(kind, r.Message)
}

// CheckExercise compiles the reader's code for the exercise; in the GPU mode it also checks it
// against the float64 reference on every output of the exercise's small shapes and on 256 random
// rows of the article's shape (NaN-poisoned outputs, fresh random inputs), then times it against v0
// at the article's shape. In the no-GPU mode it compiles and says that running needs a GPU.
func CheckExercise(env *lab.Env, e Exercise, code string) (*ExerciseResult, error) {
	if !strings.Contains(code, e.Step.Kernel) {
		return nil, fmt.Errorf("%s: the kernel must be called %s (extern \"C\")", e.Title, e.Step.Kernel)
	}
	src, _ := e.Step.Source(code)
	prog, err := env.Build(src, e.Step.Kernel)
	if err != nil {
		return nil, err
	}
	r := &ExerciseResult{Compiled: true}
	l, _ := e.Step.Plan(ArticleShape, gpu.DeviceInfo{})
	r.Report = prog.Report(e.Step.Kernel, l.Config.Block.Count(), l.Config.SharedBytes)
	if e.NeedsShared && r.Report.StaticSharedBytes == 0 {
		r.Message = fmt.Sprintf("Not yet: %s declares no __shared__ memory (0 bytes of static shared memory in its compile report); the exercise is to stage the w and k rows there.", e.Step.Kernel)
		return r, nil
	}
	if !env.GPU() {
		r.Message = fmt.Sprintf("%s compiled for %s (%d bytes of static shared memory). Checking and timing it needs a GPU (%s).",
			e.Step.Kernel, prog.Compiled.Arch, r.Report.StaticSharedBytes, env.Mode)
		return r, nil
	}
	r.Ran = true
	shapes := append(append([]Shape{}, e.Shapes...), ArticleShape)
	for i, s := range shapes {
		rows := 0
		if s == ArticleShape {
			rows = 256
		}
		p, err := NewProblem(env, s, uint64(1000+i), rows)
		if err != nil {
			return r, err
		}
		res, err := p.Check(e.Step, code)
		if err == nil && s == ArticleShape && res.OK {
			var run func() error
			if run, _, _, err = p.Launcher(e.Step, code); err == nil {
				r.Mine, err = env.Bench.Time(run)
			}
			if err == nil {
				if run, _, _, err = p.Launcher(Steps[0], ""); err == nil {
					r.V0, err = env.Bench.Time(run)
				}
			}
		}
		checked := p.Checked()
		p.Free()
		if err != nil {
			r.Message = "Your kernel failed to run: " + err.Error()
			return r, nil
		}
		r.Checks = append(r.Checks, fmt.Sprintf("%v (%s): %s", s, checked, res))
		if !res.OK {
			r.Message = fmt.Sprintf("Not yet: on %v, %v", s, res.Err())
			return r, nil
		}
	}
	r.OK = true
	r.Message = fmt.Sprintf("Correct on every shape. At the article's shape: yours %s, v0 %s: %.2fx faster than v0.",
		r.Mine, r.V0, r.V0.Median/r.Mine.Median)
	return r, nil
}

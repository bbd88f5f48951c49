package hopper

import (
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	kh "github.com/cudalessons/cudalessons/kernels/hopper"
	"github.com/cudalessons/cudalessons/lessons/matmul"
)

// Exercises are the lesson's exercises (helpers/lab's contract: a notebook cell, the tests and the
// grader run the same Check). Each hands the reader a step's whole file with one piece taken out.
var Exercises = []lab.Exercise{Exercise1, Exercise2}

func init() { Lesson.Exercises = Exercises }

// Ex1Step and Ex2Step launch the exercises' kernels as steps 1 and 2 are launched.
var (
	Ex1Step = exerciseStep(Steps[0], "ex1_wgmma")
	Ex2Step = exerciseStep(Steps[1], "ex2_tma")
)

func exerciseStep(st Step, kernel string) Step {
	st.Name, st.File, st.Kernel = "your "+st.Name, kernel+".cu", kernel
	return st
}

// The piece each exercise takes out of its step's file, and what the starter has instead.
const (
	ex1Solution = `    return (u64)((smem_addr(p) & 0x3FFFF) >> 4) | ((u64)((lbo & 0x3FFFF) >> 4) << 16) |
           ((u64)((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);`
	ex1Starter = `    // TODO: the whole descriptor. So far only the start address is in it (bits 0-13, in units of
    // 16 bytes): the leading and stride byte offsets and the swizzle mode are missing.
    return (u64)((smem_addr(p) & 0x3FFFF) >> 4);`
	ex2Solution = `            if (r < M) *(u32 *)&C[(size_t)r * N + c] = pack2(d[4 * j], d[4 * j + 1]);
            if (r + 8 < M) *(u32 *)&C[(size_t)(r + 8) * N + c] = pack2(d[4 * j + 2], d[4 * j + 3]);`
	ex2Starter = `            // TODO: d[4j] and d[4j+1] are row r, columns c and c+1. Where do d[4j+2] and d[4j+3] go?
            if (r < M) *(u32 *)&C[(size_t)r * N + c] = pack2(d[4 * j], d[4 * j + 1]);`
)

// exerciseSource is a step's file with its kernel renamed and, when hole is true, its solution
// piece replaced by the starter's; "" when the file does not hold the piece (a test catches it).
func exerciseSource(st Step, kernel, solution, starter string, hole bool) string {
	src, err := kh.Source(st.File)
	if err != nil || !strings.Contains(src.Code, solution) {
		return ""
	}
	code := strings.Replace(src.Code, " "+st.Kernel+"(", " "+kernel+"(", 1)
	if hole {
		code = strings.Replace(code, solution, starter, 1)
	}
	return code
}

// Exercise1 takes the descriptor out of step 1.
var Exercise1 = lab.Exercise{
	Number: 1,
	Title:  "Exercise 1: the wgmma matrix descriptor",
	Task: "The cell holds step 1 with its kernel renamed `ex1_wgmma` and the body of `smem_desc` gutted: it returns only the start " +
		"address. Write the 64-bit descriptor wgmma reads a tile through: bits 0-13 the start address / 16, bits 16-29 the leading byte " +
		"offset / 16, bits 32-45 the stride byte offset / 16, bits 62-63 the swizzle mode (1 for 128 bytes). The callers already pass " +
		"the right offsets (16 and 1024 for A, 8192 and 1024 for B): only the packing is missing. Launch as step 1 (grid (N/128, M/64), " +
		"block 128). The check runs your kernel in fp16 against float64 on every output of 128x256x128 and 256x256x128, then on the " +
		"sampled 4096^3, and times it there against step 1.",
	Kernel:   Ex1Step.Kernel,
	Starter:  exerciseSource(Steps[0], Ex1Step.Kernel, ex1Solution, ex1Starter, true),
	Solution: func() (string, error) { return solutionOf(Steps[0], Ex1Step.Kernel, ex1Solution) },
	Check: func(env *lab.Env, code string) (lab.ExerciseResult, error) {
		return checkExercise(env, Ex1Step, Steps[0], code)
	},
}

// Exercise2 takes the second half of the accumulator fragment out of step 2's stores.
var Exercise2 = lab.Exercise{
	Number: 2,
	Title:  "Exercise 2: where the accumulators go",
	Task: "The cell holds step 2 with its kernel renamed `ex2_tma`, and its epilogue, `store_tile`, writes only half of each " +
		"thread's accumulators: d[4j] and d[4j+1] (row r, columns c and c+1). After a wgmma m64nNk16, thread t of warp w holds, for each " +
		"8-column slice j, rows 16w + t/4 and 16w + t/4 + 8 of the warpgroup's 64 rows, columns 8j + 2(t%4) and the next. Write the " +
		"other half, masked at the edge like the first. The rows the starter leaves unwritten stay NaN, which the check finds. It runs " +
		"your kernel in fp16 against float64 on every output of 128x256x128 and 256x256x128 (partial TMA tiles in M and N), then on the " +
		"sampled 4096^3, and times it there against step 2.",
	Kernel:   Ex2Step.Kernel,
	Starter:  exerciseSource(Steps[1], Ex2Step.Kernel, ex2Solution, ex2Starter, true),
	Solution: func() (string, error) { return solutionOf(Steps[1], Ex2Step.Kernel, ex2Solution) },
	Check: func(env *lab.Env, code string) (lab.ExerciseResult, error) {
		return checkExercise(env, Ex2Step, Steps[1], code)
	},
}

func solutionOf(st Step, kernel, solution string) (string, error) {
	code := exerciseSource(st, kernel, solution, "", false)
	if code == "" {
		return "", fmt.Errorf("hopper: %s no longer holds the exercise's piece", st.File)
	}
	return code, nil
}

// ExerciseShapes are the shapes every exercise is checked on, on every output, before the sampled
// 4096^3.
var ExerciseShapes = []matmul.Shape{{M: 128, N: 256, K: 128}, TryShape}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func timingOf(r record.Record) bench.Timing {
	return bench.Timing{Median: r.MedianMS, Min: r.MinMS, Max: r.MaxMS}
}

// checkExercise compiles the reader's kernel for compute_90a and, on a Hopper GPU, checks it as st
// on ExerciseShapes and the sampled 4096^3 in fp16, and times it there against ref. Where it cannot
// compile (an NVRTC older than 12.0) or run (no Hopper GPU), it says so and decides nothing.
func checkExercise(env *lab.Env, st, ref Step, code string) (lab.ExerciseResult, error) {
	r := lab.ExerciseResult{RefName: ref.Name}
	if !strings.Contains(code, st.Kernel+"(") {
		r.Reason = fmt.Sprintf("The kernel must be called %s (extern \"C\").", st.Kernel)
		return r, nil
	}
	src, err := st.Source(code)
	if err != nil {
		return r, err
	}
	prog, err := env.BuildWith(src, st.Options(FP16, env.Device()), st.Kernel)
	switch {
	case unbuildable(err):
		r.Passed = true
		r.Reason = "Not checked here: " + firstLine(err) + ". Where NVRTC 12.0 or newer is installed your kernel is compiled, and on a Hopper GPU checked and timed."
		return r, nil
	case err != nil:
		r.Reason = "It does not compile: " + firstLine(err)
		r.Log = err.Error()
		return r, nil
	}
	r.Compiled = true
	d := env.Device()
	if NeedHopper(st.Name, d) != nil { // the report at an H100's launch
		h100, _ := gpu.LookupProfile("h100")
		d = h100.Device()
	}
	cfg, err := st.Plan(Article, d)
	if err != nil {
		return r, err
	}
	r.Report = prog.Report(st.Kernel, cfg.Block.Count(), cfg.SharedBytes)
	if !env.GPU() {
		r.Passed = true
		r.Reason = fmt.Sprintf("%s compiled for %s. Checking and timing it needs a Hopper GPU (%s).", st.Kernel, Arch, env.Mode)
		return r, nil
	}
	if err := NeedHopper(st.Name, env.Device()); err != nil {
		r.Passed = true
		r.Reason = fmt.Sprintf("%s compiled for %s. Checking and timing it needs a Hopper GPU: %v.", st.Kernel, Arch, err)
		return r, nil
	}
	for i, s := range append(append([]matmul.Shape{}, ExerciseShapes...), Article) {
		p, err := NewProblem(env, s, FP16, uint64(700+i))
		if err != nil {
			return r, err
		}
		res, err := p.Check(st, code)
		if err != nil {
			p.Free()
			r.Reason = "Your kernel failed to run: " + firstLine(err)
			return r, nil
		}
		r.Checks = append(r.Checks, fmt.Sprintf("%v (%s): %s", s, p.Sample.What, res))
		if !res.OK {
			p.Free()
			r.Reason = fmt.Sprintf("Not yet: on %v, %v", s, res.Err())
			return r, nil
		}
		if s == Article {
			mine, err := p.Measure("exercise", st, code)
			if err == nil {
				var orig record.Record
				if orig, err = p.Measure("exercise", ref, ""); err == nil {
					r.Mine, r.Ref, r.Ran = timingOf(mine), timingOf(orig), true
				}
			}
			if err != nil {
				p.Free()
				return r, err
			}
		}
		p.Free()
	}
	r.Ran, r.Passed = true, true
	r.Reason = "Correct on every shape."
	return r, nil
}

//go:build !nocuda

package trilinear

import (
	"testing"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	kt "github.com/cudalessons/cudalessons/kernels/trilinear"
)

// sanitizeShapes keep every launch to a few dozen blocks: N = 37 points leaves a partial last block
// for every kernel (8, 16 or 32 points a block); F = 45 is off every vector width and past a warp
// (the general kernels, and a warp's loop over F with a tail of 13), F = 136 = 8 x 17 is taken by the
// float4 and half vector kernels (34 float4s a row: a warp's loop with a tail of 2, and rows narrower
// than the 2-D block's x).
var sanitizeShapes = []Shape{{N: 37, F: 45}, {N: 37, F: 136}}

// TestSanitize is the package's part of the compute-sanitizer pass (cmd/sanitize runs only this test,
// under memcheck, racecheck and synccheck): every kernel of kernels/trilinear, each checked against
// the float64 reference on NaN-poisoned outputs, at sanitizeShapes.
//
//   - Every step (the forward kernels 1_article to 4_half in float32, float16 and bfloat16, the
//     backward kernels 5 and 6, the fused 7) with aligned buffers and buffers one element off: at
//     F = 136 aligned the vector kernels, else the general ones (_any, tri_bw_points,
//     tri_train_fused, step 3's fallback to tri_fw_coalesced).
//   - The GPU op forward and backward at both shapes (points in [-1.25, 1.25], some clamped), and its
//     gradient check on two small shapes (F = 3 and F = 4), a few elements of each input.
//   - Each exercise's solution, compiled from its file under solutions/ and launched as its exercise
//     launches a reader's kernel, with that step's arguments and check: the exercise's own check
//     would run it on 1000 points (up to 145 blocks) and names its source exercise<n>.cu, which the
//     launch records do not tie to the solution's file.
func TestSanitize(t *testing.T) {
	env := labtest.Open(t)
	for i, s := range sanitizeShapes {
		checkStepsAt(t, env, s, uint64(200+i))
		r, err := OpCheck(env, s, uint64(210+i), -1.25, 1.25, 0)
		if err != nil {
			t.Errorf("op %v: %v", s, err)
		} else if !r.OK() {
			t.Errorf("op: %v", r)
		}
	}
	for i, s := range GradCheckShapes[1:3] {
		res, err := GradCheckGPU(env, s, uint64(60+i), 4)
		if err != nil {
			t.Errorf("gradcheck %v: %v", s, err)
		} else if !res.OK {
			t.Errorf("gradcheck %v: %v: %v", s, res, res.Err())
		}
	}
	for _, x := range Exercises {
		checkSolution(t, env, x)
	}
	labtest.LaunchedEvery(t, kt.Kernels, env)
}

// solutionRuns are how each exercise's check launches a reader's kernel (exercises.go): its solution's
// file, the step whose arguments and check it takes, and its launch.
var solutionRuns = map[string]struct {
	file, step string
	cfg        func(Shape) gpu.Config
}{
	"ex1_coalesced": {"solutions/ex1_coalesced.cu", "2 coalesced", func(s Shape) gpu.Config {
		return gpu.Config{Grid: gpu.D1(max(1, gpu.CeilDiv(s.N*s.F, Block))), Block: gpu.D1(Block)}
	}},
	"ex2_dpoints": {"solutions/ex2_dpoints.cu", "6 backward points", func(s Shape) gpu.Config {
		return gpu.Config{Grid: gpu.D1(max(1, gpu.CeilDiv(s.N, Block/32))), Block: gpu.D1(Block)}
	}},
}

// checkSolution builds exercise x's solution from its file and checks it at sanitizeShapes, with
// aligned and misaligned buffers, points in [-1, 1] (the exercises do not clamp).
func checkSolution(t *testing.T, env *lab.Env, x lab.Exercise) {
	t.Helper()
	run, ok := solutionRuns[x.Kernel]
	if !ok {
		t.Errorf("exercise %d: no launch known for %s", x.Number, x.Kernel)
		return
	}
	src, err := kt.Source(run.file)
	if err != nil {
		t.Fatal(err)
	}
	if sol, err := x.Solution(); err != nil || sol != src.Code {
		t.Fatalf("exercise %d: its solution is not %s (%v)", x.Number, run.file, err)
	}
	prog, err := env.Build(src, x.Kernel)
	if err != nil {
		t.Fatal(err)
	}
	k, err := prog.Kernel(x.Kernel)
	if err != nil {
		t.Fatal(err)
	}
	st := mustStep(run.step)
	for i, s := range sanitizeShapes {
		for _, offset := range []int{0, 1} {
			p, err := NewProblem(env, s, uint64(220+i), -1, 1, 0, offset)
			if err != nil {
				t.Fatal(err)
			}
			args, _, err := p.args(st)
			if err != nil {
				p.Free()
				t.Fatal(err)
			}
			res, _, err := p.CheckRun(st, func() error { return k.Launch(run.cfg(s), args...) }, Launch{File: run.file, Kernel: x.Kernel})
			p.Free()
			if err != nil {
				t.Errorf("exercise %d solution %v offset %d: %v", x.Number, s, offset, err)
			} else if !res.OK() {
				t.Errorf("exercise %d solution %v offset %d: %v", x.Number, s, offset, res.Err())
			}
		}
	}
}

package giou

import (
	"fmt"
	"math"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	kg "github.com/cudalessons/cudalessons/kernels/giou"
)

// Starter1 is exercise 1's starting point: the GIoU of one box slot, with the intersection left to write.
const Starter1 = `// One thread per box slot i = b*M + j: out[i] = 1 - GIoU(pred box, target box) for a valid slot
// (j < counts[b]), 0 for padding.
#define EPS 1e-5f

extern "C" __global__ void ex1_giou(const float *__restrict__ pred, const float *__restrict__ target, const int *__restrict__ counts,
                                    float *__restrict__ out, int B, int M) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)B * M) return;
    const int b = (int)(i / M), j = (int)(i % M);
    if (j >= counts[b]) {
        out[i] = 0.f;
        return;
    }
    const float *p = pred + 4 * i, *t = target + 4 * i;  // (x1, y1, x2, y2)
    const float a1 = (p[2] - p[0]) * (p[3] - p[1]);
    const float a2 = (t[2] - t[0]) * (t[3] - t[1]);
    // TODO: the width and height of the intersection of the two boxes (0 when they do not overlap).
    const float iw = 0.f, ih = 0.f;
    const float inter = iw * ih;
    const float uni = a1 + a2 - inter;
    const float ew = fmaxf(fmaxf(p[2], t[2]) - fminf(p[0], t[0]), 0.f);
    const float eh = fmaxf(fmaxf(p[3], t[3]) - fminf(p[1], t[1]), 0.f);
    const float enc = ew * eh;
    out[i] = 1.f - (inter / fmaxf(uni, EPS) - (enc - uni) / fmaxf(enc, EPS));
}
`

// Starter2 is exercise 2's starting point: the whole gradient but the enclosing box's part.
const Starter2 = `// One thread per box slot: dpred = dL/dpred for L = mean over the valid boxes of (1 - GIoU),
// zero for padding. inv_total = 1 / (number of valid boxes).
#define EPS 1e-5f

extern "C" __global__ void ex2_grad(const float *__restrict__ pred, const float *__restrict__ target, const int *__restrict__ counts,
                                    float *__restrict__ dpred, int B, int M, float inv_total) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)B * M) return;
    const int b = (int)(i / M), j = (int)(i % M);
    float *d = dpred + 4 * i;
    if (j >= counts[b]) {
        d[0] = d[1] = d[2] = d[3] = 0.f;
        return;
    }
    const float *p = pred + 4 * i, *t = target + 4 * i;
    const float aw = p[2] - p[0], ah = p[3] - p[1];
    const float a1 = aw * ah, a2 = (t[2] - t[0]) * (t[3] - t[1]);
    // intersection: which box's edge won each max/min (ties go to pred)
    const bool lx = p[0] >= t[0], ly = p[1] >= t[1], rx = p[2] <= t[2], ry = p[3] <= t[3];
    const float iw0 = (rx ? p[2] : t[2]) - (lx ? p[0] : t[0]);
    const float ih0 = (ry ? p[3] : t[3]) - (ly ? p[1] : t[1]);
    const float iw = fmaxf(iw0, 0.f), ih = fmaxf(ih0, 0.f);
    const float inter = iw * ih;
    const float uni = a1 + a2 - inter;
    const float uc = fmaxf(uni, EPS);
    // enclosing box: which box's edge won each min/max (ties go to pred)
    const bool ex1 = p[0] <= t[0], ey1 = p[1] <= t[1], ex2 = p[2] >= t[2], ey2 = p[3] >= t[3];
    const float ew0 = (ex2 ? p[2] : t[2]) - (ex1 ? p[0] : t[0]);
    const float eh0 = (ey2 ? p[3] : t[3]) - (ey1 ? p[1] : t[1]);
    const float ew = fmaxf(ew0, 0.f), eh = fmaxf(eh0, 0.f);
    const float enc = ew * eh;
    const float ec = fmaxf(enc, EPS);
    // G = inter/uc - (enc - uni)/ec: its partial derivatives
    const float dU = (uni > EPS ? -inter / (uc * uc) : 0.f) + 1.f / ec;
    const float dI = 1.f / uc - dU;
    const float dE = -(1.f / ec - (enc > EPS ? (enc - uni) / (ec * ec) : 0.f));
    const float giw = iw0 > 0.f ? dI * ih : 0.f, gih = ih0 > 0.f ? dI * iw : 0.f;
    // TODO: dG/d(ew) and dG/d(eh) through enc = ew * eh (0 where the width was clamped), and route
    // them to the pred coordinates that won the enclosing box's min/max (ex1, ey1, ex2, ey2).
    const float gew = 0.f, geh = 0.f;
    const float s = -inv_total;  // L = mean(1 - G)
    d[0] = s * (-ah * dU - (lx ? giw : 0.f));
    d[1] = s * (-aw * dU - (ly ? gih : 0.f));
    d[2] = s * (ah * dU + (rx ? giw : 0.f));
    d[3] = s * (aw * dU + (ry ? gih : 0.f));
}
`

// exShapes are the batches an exercise is checked on (every output), before the article's.
var exShapes = []Shape{{1, 1}, {3, 5}, {7, 33}, {65, 64}}

// exArticle says whether the exercise checks run (and time) the article's workload; the tests turn
// it off in -short mode, which the sanitizer runs.
var exArticle = true

// Exercises are the lesson's exercises.
var Exercises = []lab.Exercise{
	{Number: 1, Title: "Exercise 1: the intersection term", Kernel: "ex1_giou",
		Task: "Finish `ex1_giou`: one thread per box slot (grid ceil(B*M/256) blocks of 256) writes 1 - GIoU of its predicted and target box, " +
			"0 for a padded slot. The intersection's width and height are missing: the overlap of the two boxes' x ranges (the smaller right edge minus the larger left edge) " +
			"and likewise in y, clamped at 0 when the boxes miss each other. The check runs it on NaN-poisoned outputs against the float64 reference on (B, M) = (1,1), (3,5), (7,33), (65,64) " +
			"and the article's workload, every slot, and times it against step 1.",
		Starter:  Starter1,
		Solution: kg.Kernels.CodeOf("solutions/ex1_intersection.cu"),
		Check:    checkExercise1},
	{Number: 2, Title: "Exercise 2: the backward of the enclosing-box term", Kernel: "ex2_grad",
		Task: "Finish `ex2_grad`, dL/dpred for L = mean(1 - GIoU), one thread per slot. Everything is there but the enclosing box: with enc = ew * eh, " +
			"dG/d(ew) = dE * eh and dG/d(eh) = dE * ew (0 where the width or height was clamped at 0, ew0 <= 0), and ew = max(p.x2, t.x2) - min(p.x1, t.x1) moves with p.x2 " +
			"when pred won the max (ex2) and against p.x1 when it won the min (ex1); likewise in y. Add those terms to d[0..3]. " +
			"The check compares every element of dpred with the float64 gradient (per box) on the same batches as exercise 1, and times it against step 5.",
		Starter:  Starter2,
		Solution: kg.Kernels.CodeOf("solutions/ex2_enclosing_grad.cu"),
		Check:    checkExercise2},
}

// runExercise compiles code and, in the GPU mode, runs it on every exercise batch against want
// (the float64 reference of the batch), timing it against step ref at the article's workload.
func runExercise(env *lab.Env, x lab.Exercise, code string, grad bool, ref Step) (lab.ExerciseResult, error) {
	prog, r, err := env.BuildExercise(x, code)
	if prog == nil || err != nil {
		return r, err
	}
	r.Report = prog.Report(x.Kernel, 256, 0)
	if !env.GPU() {
		r.Passed = true
		r.Reason = fmt.Sprintf("%s compiled for %s. Checking and timing it needs a GPU (%s).", x.Kernel, env.Arch(), env.Mode)
		return r, nil
	}
	k, err := prog.Kernel(x.Kernel)
	if err != nil {
		return r, err
	}
	r.Ran = true
	shapes := append([]Shape{}, exShapes...)
	if exArticle {
		shapes = append(shapes, ArticleShape)
	}
	for i, s := range shapes {
		bt := Generate(s, uint64(500+i))
		stop, err := func() (bool, error) {
			p, err := NewProblem(env, bt, 0)
			if err != nil {
				return true, err
			}
			defer p.Free()
			args, err := p.args(OpForward, OpForward.Kernel) // pred, target, counts, ...
			if err != nil {
				return true, err
			}
			out, err := buf[float32](p, "exercise", 4*s.Slots(), 0, nil)
			if err != nil {
				return true, err
			}
			if err := out.Poison(); err != nil {
				return true, err
			}
			kargs := []any{args[0], args[1], args[2], out, int32(s.B), int32(s.M)}
			if grad {
				kargs = append(kargs, float32(1/math.Max(float64(bt.Total()), 1)))
			}
			cfg := gpu.Config{Grid: gpu.D1(max(1, gpu.CeilDiv(s.Slots(), 256))), Block: gpu.D1(256)}
			run := func() error { return k.Launch(cfg, kargs...) }
			if err := run(); err != nil {
				r.Reason = fmt.Sprintf("Your kernel failed to run on %v: %v", s, err)
				return true, nil
			}
			if err := env.Session.Synchronize(); err != nil {
				r.Reason = fmt.Sprintf("Your kernel failed on %v: %v", s, err)
				return true, nil
			}
			got, err := out.ToHost()
			if err != nil {
				return true, err
			}
			pred, target := bt.Inputs(F32)
			var res check.Result
			if grad {
				want := make([]float64, len(pred))
				Loss(s, pred, target, bt.Counts, want)
				res = CompareGrad(widen(got), want, bt)
			} else {
				res = check.Compare(widen(got[:s.Slots()]), Terms(s, pred, target, bt.Counts), LossTol)
			}
			r.Checks = append(r.Checks, fmt.Sprintf("%v, every slot: %v", s, res))
			if !res.OK {
				r.Reason = fmt.Sprintf("Not yet: on %v, %v", s, res.Err())
				return true, nil
			}
			if s != ArticleShape {
				return false, nil
			}
			if r.Mine, err = env.Bench.Time(run); err != nil {
				return true, err
			}
			base, _, err := p.Launcher(ref, "")
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
			return r, err
		}
	}
	r.Passed = true
	r.Reason = "Correct on every batch."
	return r, nil
}

func checkExercise1(env *lab.Env, code string) (lab.ExerciseResult, error) {
	return runExercise(env, lab.Exercise{Number: 1, Kernel: "ex1_giou"}, code, false, mustStep("1 article"))
}

func checkExercise2(env *lab.Env, code string) (lab.ExerciseResult, error) {
	return runExercise(env, lab.Exercise{Number: 2, Kernel: "ex2_grad"}, code, true, mustStep("5 fused fwd+bwd"))
}

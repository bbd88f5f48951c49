package conv

import (
	"fmt"
	"math"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	kc "github.com/cudalessons/cudalessons/kernels/conv"
)

// Starter1 is exercise 1's starting point: step 1's loops with the window's position left to write.
const Starter1 = `// One thread per output y[n][k][oh][ow] (grid-stride over N*K*OH*OW).
extern "C" __global__ void ex1_direct(const float *__restrict__ x, const float *__restrict__ w,
                                      const float *__restrict__ bias, float *__restrict__ y, int N, int C, int H,
                                      int W, int K, int R, int S, int P, int OH, int OW) {
    const long long total = (long long)N * K * OH * OW;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        const int ow = (int)(i % OW), oh = (int)((i / OW) % OH), k = (int)((i / OW / OH) % K);
        const long long n = i / OW / OH / K;
        float acc = 0.f;
        for (int c = 0; c < C; ++c)
            for (int r = 0; r < R; ++r)
                for (int s = 0; s < R; ++s) {
                    // TODO: the input row and column of tap (r, s) for output (oh, ow), with the
                    // stride S and the padding P; taps in the padding add nothing.
                    const int ih = oh + r, iw = ow + s;
                    if (ih >= H || iw >= W) continue;
                    acc += x[((n * C + c) * H + ih) * W + iw] * w[((k * C + c) * R + r) * R + s];
                }
        y[i] = acc + bias[k];
    }
}
`

// Starter2 is exercise 2's starting point: the atomicMax trick of step 6, which is only right for
// values >= 0.
const Starter2 = `// One thread per input element in[nc][oh][ow] (grid-stride): push it into every 3x3 stride-2
// window that contains it. out starts at -inf; in holds values of ANY sign.
__device__ __forceinline__ void atomic_max_float(float *addr, float v) {
    // TODO: right only for v >= 0 (step 6's trick). Make it right for any sign.
    atomicMax(reinterpret_cast<int *>(addr), __float_as_int(v));
}

extern "C" __global__ void ex2_pool_any_sign(const float *__restrict__ in, float *__restrict__ out, int NC, int OH,
                                             int OW, int PH, int PW) {
    const long long total = (long long)NC * OH * OW;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        const int ow = (int)(i % OW), oh = (int)((i / OW) % OH);
        const long long nc = i / OW / OH;
        const int ph0 = oh < 2 ? 0 : (oh - 1) / 2, ph1 = min(oh / 2, PH - 1);
        const int pw0 = ow < 2 ? 0 : (ow - 1) / 2, pw1 = min(ow / 2, PW - 1);
        for (int ph = ph0; ph <= ph1; ++ph)
            for (int pw = pw0; pw <= pw1; ++pw) atomic_max_float(out + (nc * PH + ph) * PW + pw, in[i]);
    }
}
`

// ex1Shapes are the shapes exercise 1 is checked on (every output).
var ex1Shapes = []Shape{{N: 1, C: 1, H: 1, W: 1, K: 1, R: 1, S: 1, P: 0}, {N: 2, C: 3, H: 7, W: 9, K: 5, R: 3, S: 2, P: 1},
	{N: 2, C: 3, H: 37, W: 41, K: 7, R: 11, S: 4, P: 2}, {N: 1, C: 4, H: 10, W: 10, K: 3, R: 3, S: 1, P: 1}}

// ex1Timed is the shape exercise 1 is timed on against step 1 (a tenth of the article's batch).
var ex1Timed = Shape{N: 10, C: 3, H: 224, W: 224, K: 96, R: 11, S: 4, P: 2}

// exTimed says whether the exercises' checks also time the kernel (at the article's size); the
// tests turn it off in -short mode and the sanitizer test.
var exTimed = true

// Exercises are the lesson's exercises.
var Exercises = []lab.Exercise{
	{Number: 1, Title: "Exercise 1: the window of a strided, padded convolution", Kernel: "ex1_direct",
		Task: "Finish `ex1_direct`, step 1's direct convolution: for output (oh, ow) and tap (r, s), which input row and column does the window read, " +
			"given the stride S and the padding P, and when is the tap in the padding (and adds nothing)? It is launched like step 1 (blocks of 256, " +
			"a grid-stride loop). The check runs it on NaN-poisoned outputs against the float64 reference on four shapes (size 1, stride 2 with padding, " +
			"an AlexNet-like 11 x 11 stride 4 padding 2, a 3 x 3 'same' layer) and times it against step 1 on a tenth of the article's batch.",
		Starter: Starter1, Solution: kc.Kernels.CodeOf("solutions/ex1_direct.cu"), Check: checkExercise1},
	{Number: 2, Title: "Exercise 2: an atomic max for floats of any sign", Kernel: "ex2_pool_any_sign",
		Task: "Step 6's `atomicMax` on the float's bits is right only for values >= 0. Make `atomic_max_float` right for ANY sign with integer atomics " +
			"(hint: for v < 0 the bits read as an UNSIGNED int order in reverse; `atomicMin` on them; or a compare-and-swap loop with `atomicCAS`). " +
			"The kernel pushes each input element (any sign) into every 3 x 3 stride-2 window that contains it; the output starts at -inf. " +
			"The check runs it on inputs uniform in [-1, 1) and on all-negative inputs against the float64 max pool.",
		Starter: Starter2, Solution: kc.Kernels.CodeOf("solutions/ex2_pool_any_sign.cu"), Check: checkExercise2},
}

func gridStride(d gpu.DeviceInfo, n int) gpu.Config {
	return gpu.Config{Grid: gpu.D1(gpu.WavesGrid(d, max(1, n), Block, 8)), Block: gpu.D1(Block)}
}

func checkExercise1(env *lab.Env, code string) (lab.ExerciseResult, error) {
	x := lab.Exercise{Number: 1, Kernel: "ex1_direct"}
	prog, r, err := env.BuildExercise(x, code)
	if prog == nil || err != nil {
		return r, err
	}
	r.Report = prog.Report(x.Kernel, Block, 0)
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
	st := Steps[0]
	shapes := ex1Shapes
	if exTimed {
		shapes = append(append([]Shape{}, ex1Shapes...), ex1Timed)
	}
	for i, s := range shapes {
		stop, err := func() (bool, error) {
			checked := 0
			if s == ex1Timed {
				checked = 2048
			}
			p, err := NewProblem(env, s, uint64(300+i), checked)
			if err != nil {
				return true, err
			}
			defer p.Free()
			l := Launch{Kernel: x.Kernel, Config: gridStride(env.Session.Device, s.YLen())}
			run, _, _, err := p.LaunchWith(st, k, l)
			if err != nil {
				return true, err
			}
			res, _, err := p.CheckRun(st, run, l)
			if err != nil {
				r.Reason = fmt.Sprintf("Your kernel failed to run on %v: %v", s, err)
				return true, nil
			}
			r.Checks = append(r.Checks, fmt.Sprintf("%v (%s): %s", s, p.CheckedLabel(false), res))
			if !res.OK {
				r.Reason = fmt.Sprintf("Not yet: on %v, %v", s, res.Err())
				return true, nil
			}
			if s != ex1Timed {
				return false, nil
			}
			if r.Mine, err = env.Bench.Time(run); err != nil {
				return true, err
			}
			base, _, _, err := p.Launcher(st, "")
			if err != nil {
				return true, err
			}
			if r.Ref, err = env.Bench.Time(base); err != nil {
				return true, err
			}
			r.RefName = st.Name
			return false, nil
		}()
		if err != nil || stop {
			return r, err
		}
	}
	r.Passed = true
	r.Reason = "Correct on every shape: the window starts at (oh*S - P, ow*S - P) and the padding adds nothing."
	return r, nil
}

// usesSignAwareAtomics says whether a kernel's PTX has more than a signed integer max: an unsigned
// min, a compare-and-swap, or a float atomic (what a max for any sign needs).
func usesSignAwareAtomics(ptx string) bool {
	for _, op := range []string{"atom.global.min.u32", "atom.min.u32", "atom.global.cas", "atom.cas", "atom.global.max.u32", "atom.max.u32", "atom.global.min.s32", "atom.min.s32"} {
		if strings.Contains(ptx, op) {
			return true
		}
	}
	return false
}

func checkExercise2(env *lab.Env, code string) (lab.ExerciseResult, error) {
	x := lab.Exercise{Number: 2, Kernel: "ex2_pool_any_sign"}
	prog, r, err := env.BuildExercise(x, code)
	if prog == nil || err != nil {
		return r, err
	}
	r.Report = prog.Report(x.Kernel, Block, 0)
	if !usesSignAwareAtomics(prog.Compiled.PTX) {
		r.Reason = fmt.Sprintf("Not yet: %s uses only a signed integer atomicMax on the float bits (its PTX has no unsigned min, no compare-and-swap): a negative float's bits order in reverse, so the max of -1 and -2 comes out -2.", x.Kernel)
		return r, nil
	}
	if !env.GPU() {
		r.Passed = true
		r.Reason = fmt.Sprintf("%s compiled for %s and uses more than a signed atomicMax. Checking it needs a GPU (%s).", x.Kernel, prog.Compiled.Arch, env.Mode)
		return r, nil
	}
	k, err := prog.Kernel(x.Kernel)
	if err != nil {
		return r, err
	}
	r.Ran = true
	for i, c := range []struct {
		nc, oh, ow int
		lo, hi     float64
	}{{1, 3, 3, -1, 1}, {6, 9, 8, -1, 1}, {96, 55, 55, -1, 1}, {5, 17, 20, -3, -0.5}} {
		res, err := poolCheck(env, k, c.nc, c.oh, c.ow, c.lo, c.hi, uint64(400+i))
		if err != nil {
			return r, err
		}
		r.Checks = append(r.Checks, fmt.Sprintf("%d planes of %dx%d, inputs in [%g, %g): %v", c.nc, c.oh, c.ow, c.lo, c.hi, res))
		if !res.OK {
			r.Reason = fmt.Sprintf("Not yet: on %d planes of %dx%d with inputs in [%g, %g), %v", c.nc, c.oh, c.ow, c.lo, c.hi, res.Err())
			return r, nil
		}
	}
	// The price of the sign: the reader's kernel against step 6's signed atomicMax (the starter, right
	// only for values >= 0) on AlexNet's 96 planes of 55 x 55, inputs >= 0 where both are right.
	r.Passed = true
	r.Reason = "Correct for every sign: the pooled maxima match the float64 reference exactly."
	if !exTimed {
		return r, nil
	}
	ref, err := env.Build(compile.Source{Name: "ex2_signed_atomicmax.cu", Code: Starter2}, x.Kernel)
	if err != nil {
		return r, err
	}
	rk, err := ref.Kernel(x.Kernel)
	if err != nil {
		return r, err
	}
	job, err := newPoolJob(env, 96, 55, 55, 0, 1, 410)
	if err != nil {
		return r, err
	}
	defer job.free()
	if r.Mine, err = env.Bench.Time(func() error { return job.launch(k) }); err != nil {
		return r, err
	}
	if r.Ref, err = env.Bench.Time(func() error { return job.launch(rk) }); err != nil {
		return r, err
	}
	r.RefName = "step 6's signed atomicMax (right for >= 0 only)"
	return r, nil
}

// poolJob is an ex2-style max pool on the GPU: nc planes of oh x ow inputs uniform in [lo, hi),
// the output starting at -inf, and the float64 max pool it must equal.
type poolJob struct {
	s          Shape
	want       []float64
	inB, outB  *gpu.Buffer[float32]
	cfg        gpu.Config
	nc, oh, ow int
}

func newPoolJob(env *lab.Env, nc, oh, ow int, lo, hi float64, seed uint64) (*poolJob, error) {
	j := &poolJob{s: Shape{N: 1, C: 1, H: oh, W: ow, K: nc, R: 1, S: 1, P: 0}, nc: nc, oh: oh, ow: ow}
	in := NewInputs(Shape{N: 1, C: 1, H: 1, W: nc * oh * ow, K: 1, R: 1, S: 1}, seed).X
	y := make([]float64, len(in))
	for i, v := range in {
		in[i] = float32(lo + (float64(v)+1)/2*(hi-lo))
		y[i] = float64(in[i])
	}
	j.want = MaxPool(j.s, y, false)
	init := make([]float32, nc*j.s.PH()*j.s.PW())
	for i := range init {
		init[i] = float32(math.Inf(-1))
	}
	var err error
	if j.inB, err = gpu.Upload(env.Session, in); err != nil {
		return nil, err
	}
	if j.outB, err = gpu.Upload(env.Session, init); err != nil {
		j.inB.Free()
		return nil, err
	}
	j.cfg = gridStride(env.Session.Device, len(in))
	return j, nil
}

func (j *poolJob) launch(k *gpu.Kernel) error {
	return k.Launch(j.cfg, j.inB, j.outB, int32(j.nc), int32(j.oh), int32(j.ow), int32(j.s.PH()), int32(j.s.PW()))
}

func (j *poolJob) free() {
	j.inB.Free()
	j.outB.Free()
}

// poolCheck runs an ex2-style kernel on nc planes of oh x ow values uniform in [lo, hi), the output
// starting at -inf, and compares it with the float64 max pool (a max is exact: FP32Exact).
func poolCheck(env *lab.Env, k *gpu.Kernel, nc, oh, ow int, lo, hi float64, seed uint64) (check.Result, error) {
	j, err := newPoolJob(env, nc, oh, ow, lo, hi, seed)
	if err != nil {
		return check.Result{}, err
	}
	defer j.free()
	if err := j.launch(k); err != nil {
		return check.Result{}, err
	}
	if err := env.Session.Synchronize(); err != nil {
		return check.Result{}, err
	}
	got, err := j.outB.ToHost()
	if err != nil {
		return check.Result{}, err
	}
	return check.Compare(check.Float64s(got), j.want, check.FP32Exact), nil
}

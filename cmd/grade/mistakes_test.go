package main

import (
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/lessons"
)

// mistake is a typical student mistake in an exercise, made by editing its solution, and what the
// exercise's check says about it (docs/INSTRUCTORS.md quotes these).
type mistake struct {
	lesson   string
	exercise int
	name     string
	old, new string // the edit of the solution; old empty: new is the whole source
	gpu      bool   // only a GPU run can catch it (the PTX looks right)
	want     string // in the check's reason
}

var mistakes = []mistake{
	{"01_rwkv", 1, "stages the rows but never waits for the block", "    __syncthreads();\n", "", false, "never waits for its block"},
	{"01_rwkv", 1, "stages the rows but the loop still reads global memory",
		"s += ws[(T - 1) - t + u] * ks[u];", "s += w[c * T + (T - 1) - t + u] * k[row * T + u];", false, "declares no __shared__ memory that it uses"},
	{"01_rwkv", 1, "sizes the shared arrays with T", "__shared__ float ws[1024], ks[1024];", "__shared__ float ws[T], ks[T];", false, "It does not compile"},
	{"01_rwkv", 1, "stages the k row of the channel instead of the batch row", "ks[t] = k[row * T + t];", "ks[t] = k[c * T + t];", true, "Not yet: on"},
	{"01_rwkv", 2, "stages one element per thread, as in exercise 1 (half the rows)",
		"for (int i = threadIdx.x; i < T; i += blockDim.x) {", "for (int i = threadIdx.x; i < T / 2; i += blockDim.x) {", true, "Not yet: on"},
	{"01_rwkv", 2, "computes output t only, not T-1-t", "pass < 2", "pass < 1", true, "Not yet: on"},
	{"02_oneflow", 1, "packs by two (__half2, 4 bytes) instead of eight", "", `#include <cuda_fp16.h>
extern "C" __global__ void mul_mine(const __half *x, const __half *y, __half *z, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const __half2 *x2 = (const __half2 *)x, *y2 = (const __half2 *)y;
    __half2 *z2 = (__half2 *)z;
    for (long long i = tid; i < n / 2; i += stride) z2[i] = __hmul2(x2[i], y2[i]);
    if (tid == 0 && n % 2) z[n - 1] = __hmul(x[n - 1], y[n - 1]);
}
`, false, "widest global load moves 4 bytes"},
	{"02_oneflow", 1, "forgets the tail (n % 8)", "    if (t < n) z[t] = __hmul(x[t], y[t]);\n", "", true, "Not yet: on n = 1"},
	{"02_oneflow", 2, "reads the top row twice (forgets row 2r+1)", "(a.x + a.y) + (b.x + b.y)", "(a.x + a.y) * 2.0f", true, "Not yet: on"},
	{"06_giou", 1, "does not clamp the intersection's width at 0 (boxes apart in x)",
		"const float iw = fmaxf(fminf(p[2], t[2]) - fmaxf(p[0], t[0]), 0.f);", "const float iw = fminf(p[2], t[2]) - fmaxf(p[0], t[0]);", true, "Not yet: on"},
	{"06_giou", 2, "sends the enclosing width's gradient to p.x2 even when the target's edge won the max",
		"(ex2 ? gew : 0.f)", "gew", true, "Not yet: on"},
}

// Each typical mistake fails its exercise's check with the reason the guide quotes: the ones the PTX
// shows in either mode, the others on the GPU (in the no-GPU mode they compile and wait for a GPU).
func TestTypicalMistakes(t *testing.T) {
	t.Setenv("KERNELS_CACHE_DIR", t.TempDir())
	env, err := lab.OpenWith(lab.Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	byID := map[string]lab.Lesson{}
	for _, l := range lessons.All() {
		byID[l.ID] = l
	}
	for _, m := range mistakes {
		x, err := byID[m.lesson].ExerciseByNumber(m.exercise)
		if err != nil {
			t.Fatal(err)
		}
		code := m.new
		if m.old != "" {
			sol, err := x.Solution()
			if err != nil {
				t.Fatal(err)
			}
			if strings.Count(sol, m.old) != 1 {
				t.Fatalf("%s #%d, %s: the edit does not apply to the solution", m.lesson, m.exercise, m.name)
			}
			code = strings.Replace(sol, m.old, m.new, 1)
		}
		r, err := x.Check(env, code)
		if err != nil {
			t.Fatalf("%s #%d, %s: %v", m.lesson, m.exercise, m.name, err)
		}
		switch {
		case m.gpu && !env.GPU():
			if !r.Passed || r.Ran {
				t.Errorf("%s #%d, %s: in the no-GPU mode it should compile and wait for a GPU: %+v", m.lesson, m.exercise, m.name, r)
			}
		case r.Passed || !strings.Contains(r.Reason, m.want):
			t.Errorf("%s #%d, %s: passed %v, reason %q (want %q)", m.lesson, m.exercise, m.name, r.Passed, r.Reason, m.want)
		}
		t.Logf("MISTAKE %s #%d | %s | %s", m.lesson, m.exercise, m.name, r.Reason)
	}
}

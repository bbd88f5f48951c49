// KernelBench's level-1 elementwise problems (the activations L1-19..32 and L1-5's A * s), one
// float32 source for all: the formula is chosen at compile time by -D ACT=ACT_RELU, ACT_GELU, ...
// and its scalars (a negative slope, an alpha, clamp bounds, the scalar s, SELU's constants,
// softplus's threshold) come in as the arguments a and b.
//
// The loop is lesson 02's step 3 (kernels/oneflow/3_inflight.cu) with one input instead of two:
// each trip of the grid-stride loop loads PPT packs of 16 bytes (4 floats) per thread before it
// computes and stores any, so a thread keeps PPT*16 bytes of loads in flight; with HINT=1 the
// loads and stores carry the streaming cache hint (ld.global.cs / st.global.cs). The host plans
// PPT and the grid from the device (Little's law: the resident threads times PPT*16 bytes must
// cover the copy bandwidth times the DRAM latency), so the pass streams x in and y out near the
// copy bandwidth; the activations' arithmetic hides under the memory time.
//
// Each formula keeps a NaN input NaN, as PyTorch does: fmaxf and fminf would return the other
// operand, so the clamping formulas test x != x first. The others are PyTorch's own formulas
// (the erf GELU, softplus's threshold), rounded as the tolerance in lessons/kernelbench says,
// except Swish, which evaluates exp(-|x|) so that it stays accurate where exp(-x) overflows.
//
// Launch: kb_unary (x, y, long long n, float a, float b), block 256, any grid; 16-byte aligned x
// and y (the host picks kb_unary_pack1, one float per thread per trip, otherwise). The last n % 4
// elements are the scalar tail. Limits: n < 2^63.

#define ACT_RELU 1
#define ACT_LEAKY_RELU 2
#define ACT_SIGMOID 3
#define ACT_TANH 4
#define ACT_SWISH 5
#define ACT_GELU 6
#define ACT_SELU 7
#define ACT_HARDSIGMOID 8
#define ACT_SOFTPLUS 9
#define ACT_SOFTSIGN 10
#define ACT_ELU 11
#define ACT_HARDTANH 12
#define ACT_SCALE 13

#ifndef ACT
#define ACT ACT_RELU
#endif
#ifndef PPT
#define PPT 2
#endif
#ifndef HINT
#define HINT 0
#endif

__device__ __forceinline__ float4 load16(const float4 *p) {
#if HINT
    return __ldcs(p);
#else
    return *p;
#endif
}
__device__ __forceinline__ void store16(float4 *p, float4 v) {
#if HINT
    __stcs(p, v);
#else
    *p = v;
#endif
}

// act is y = f(x) for one element.
__device__ __forceinline__ float act(float x, float a, float b) {
#if ACT == ACT_RELU
    return x != x ? x : fmaxf(x, 0.f);
#elif ACT == ACT_LEAKY_RELU  // a: negative_slope
    return x > 0.f ? x : x * a;
#elif ACT == ACT_SIGMOID
    return 1.f / (1.f + expf(-x));
#elif ACT == ACT_TANH
    return tanhf(x);
#elif ACT == ACT_SWISH  // x * sigmoid(x), with exp(-|x|) in (0, 1]: no overflow for x < -88
    const float e = expf(-fabsf(x));
    const float s = 1.f + e;
    return x >= 0.f ? x / s : x * e / s;
#elif ACT == ACT_GELU  // F.gelu's default, the erf form
    return 0.5f * x * (1.f + erff(x * 0.707106781186547524f));
#elif ACT == ACT_SELU  // a: alpha, b: scale
    return x > 0.f ? b * x : b * (a * expm1f(x));
#elif ACT == ACT_HARDSIGMOID
    return x != x ? x : fminf(fmaxf(x + 3.f, 0.f), 6.f) / 6.f;
#elif ACT == ACT_SOFTPLUS  // a: threshold (beta 1)
    return x > a ? x : log1pf(expf(x));
#elif ACT == ACT_SOFTSIGN
    return x / (1.f + fabsf(x));
#elif ACT == ACT_ELU  // a: alpha
    return x > 0.f ? x : a * expm1f(x);
#elif ACT == ACT_HARDTANH  // a: min_val, b: max_val
    return x != x ? x : fminf(fmaxf(x, a), b);
#elif ACT == ACT_SCALE  // a: the scalar s
    return x * a;
#else
#error "ACT names no activation"
#endif
}

__device__ __forceinline__ float4 act4(float4 v, float a, float b) {
    return make_float4(act(v.x, a, b), act(v.y, a, b), act(v.z, a, b), act(v.w, a, b));
}

extern "C" __global__ void kb_unary(const float *__restrict__ x, float *__restrict__ y, long long n, float a, float b) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long packs = n / 4;
    const float4 *x4 = reinterpret_cast<const float4 *>(x);
    float4 *y4 = reinterpret_cast<float4 *>(y);
    for (long long base = tid; base < packs; base += stride * PPT) {
        float4 v[PPT];
#pragma unroll
        for (int j = 0; j < PPT; j++) {  // every load of the trip is issued before any is used
            const long long i = base + j * stride;
            if (i < packs) v[j] = load16(x4 + i);
        }
#pragma unroll
        for (int j = 0; j < PPT; j++) {
            const long long i = base + j * stride;
            if (i < packs) store16(y4 + i, act4(v[j], a, b));
        }
    }
    const long long t = packs * 4 + tid;  // the last n % 4 elements
    if (t < n) y[t] = act(x[t], a, b);
}

extern "C" __global__ void kb_unary_pack1(const float *__restrict__ x, float *__restrict__ y, long long n, float a, float b) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = act(x[i], a, b);
}

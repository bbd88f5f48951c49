// Elementwise step 3, more bytes in flight per thread. What changed from step 2 (the packed
// template): each trip of the grid-stride loop loads PPT packs of x and PPT packs of y (16 bytes
// each) before it multiplies and stores any, so a thread has 2*PPT*16 bytes of loads outstanding
// instead of 32; and, with HINT=1, the loads and stores carry the streaming cache hint (ld.global.cs
// / st.global.cs: evict first, the data is touched once). Why it can be faster: a memory-bound
// kernel runs at the bandwidth only when enough bytes are in flight to cover the DRAM latency
// (Little's law: bytes in flight = bandwidth x latency, about 3 TB/s x 600 ns = 1.8 MB on an
// H100); fewer, larger batches of loads per thread also mean fewer loop trips and address sums.
// Pack j of a trip is at base + j*stride, so each load instruction is still coalesced across the warp.
// Compiled with -D PPT=1|2|4 (packs per thread per trip) and -D HINT=0|1; the grid comes from the
// host (the lesson's grid rules). Launch: block 256, any grid. Limits: 16-byte aligned pointers
// (the host picks mul_inflight_pack1_* otherwise), n < 2^63.
#include <cuda_fp16.h>

#ifndef PPT
#define PPT 2
#endif
#ifndef HINT
#define HINT 0
#endif

__device__ __forceinline__ uint4 load16(const uint4 *p) {
#if HINT
    return __ldcs(p);
#else
    return *p;
#endif
}
__device__ __forceinline__ void store16(uint4 *p, uint4 v) {
#if HINT
    __stcs(p, v);
#else
    *p = v;
#endif
}

__device__ __forceinline__ float mul1(float a, float b) { return a * b; }
__device__ __forceinline__ __half mul1(__half a, __half b) { return __hmul(a, b); }

__device__ __forceinline__ uint4 mul16(uint4 a, uint4 b, float) {
    return make_uint4(__float_as_uint(__uint_as_float(a.x) * __uint_as_float(b.x)),
                      __float_as_uint(__uint_as_float(a.y) * __uint_as_float(b.y)),
                      __float_as_uint(__uint_as_float(a.z) * __uint_as_float(b.z)),
                      __float_as_uint(__uint_as_float(a.w) * __uint_as_float(b.w)));
}
__device__ __forceinline__ uint4 mul16(uint4 a, uint4 b, __half) {
    uint4 c;
    const __half2 *a2 = reinterpret_cast<const __half2 *>(&a);
    const __half2 *b2 = reinterpret_cast<const __half2 *>(&b);
    __half2 *c2 = reinterpret_cast<__half2 *>(&c);
#pragma unroll
    for (int j = 0; j < 4; j++) c2[j] = __hmul2(a2[j], b2[j]);
    return c;
}

template <typename T>
__device__ __forceinline__ void mul_inflight(const T *__restrict__ x, const T *__restrict__ y, T *__restrict__ z, long long n) {
    constexpr int N = 16 / sizeof(T);
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long packs = n / N;
    const uint4 *x4 = reinterpret_cast<const uint4 *>(x);
    const uint4 *y4 = reinterpret_cast<const uint4 *>(y);
    uint4 *z4 = reinterpret_cast<uint4 *>(z);
    for (long long base = tid; base < packs; base += stride * PPT) {
        uint4 a[PPT], b[PPT];
#pragma unroll
        for (int j = 0; j < PPT; j++) {  // every load of the trip is issued before any is used
            const long long i = base + j * stride;
            if (i < packs) {
                a[j] = load16(x4 + i);
                b[j] = load16(y4 + i);
            }
        }
#pragma unroll
        for (int j = 0; j < PPT; j++) {
            const long long i = base + j * stride;
            if (i < packs) store16(z4 + i, mul16(a[j], b[j], T()));
        }
    }
    const long long t = packs * N + tid;  // the last n % N elements
    if (t < n) z[t] = mul1(x[t], y[t]);
}

template <typename T>
__device__ __forceinline__ void mul_pack1(const T *__restrict__ x, const T *__restrict__ y, T *__restrict__ z, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) z[i] = mul1(x[i], y[i]);
}

extern "C" __global__ void mul_inflight_f32(const float *x, const float *y, float *z, long long n) {
    mul_inflight<float>(x, y, z, n);
}
extern "C" __global__ void mul_inflight_f16(const __half *x, const __half *y, __half *z, long long n) {
    mul_inflight<__half>(x, y, z, n);
}
extern "C" __global__ void mul_inflight_pack1_f32(const float *x, const float *y, float *z, long long n) {
    mul_pack1<float>(x, y, z, n);
}
extern "C" __global__ void mul_inflight_pack1_f16(const __half *x, const __half *y, __half *z, long long n) {
    mul_pack1<__half>(x, y, z, n);
}

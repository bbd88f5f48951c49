// Softmax step 7: half and bfloat16 inputs and outputs, float arithmetic.
//
// What changed from step 4 (the same online algorithm): the row is stored in 16-bit elements, so
// the same bytes carry twice the elements, and a 16-byte load brings 8 of them (a uint4 read as
// four half2 or bfloat162 pairs). Every element is converted to float at once; the max, the exp,
// the running sum and the division are in float, and each output is rounded once, on the store.
// Accumulating in half would be wrong, not just imprecise: at 64K columns the sum reaches tens of
// thousands, where half's spacing is 32 and most terms (below 1) would vanish.
// Why it matters: half the bytes of float, so about half the time for the same row length.
// Masked entries as in step 4: the exponents of the online pair are taken against safe(m), 0 while
// a thread has seen only -inf, so -inf entries add exactly 0 and a NaN keeps the row NaN.
// Launch: grid rows, block 512. Limits: any cols >= 1; vec = 1 (cols % 8 == 0 and 16-byte aligned
// x, y, checked by the plan) moves 8 elements per load, otherwise one.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)  // NVRTC has no <math.h>: +infinity from its bits
#endif
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define THREADS 512
#define WARPS (THREADS / 32)

struct MS {
    float m, s;
};
// safe is the max the exponents are taken against: 0 while only -inf was seen (exp(-inf - 0) = 0).
__device__ float safe(float m) { return m == -INFINITY ? 0.f : m; }
__device__ MS merge(MS a, MS b) {
    const float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return MS{m, a.s + b.s};  // both empty: 0, or NaN after a NaN entry
    return MS{m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}
__device__ MS block_merge(MS v, MS *sh) {
    for (int o = 16; o > 0; o >>= 1) v = merge(v, MS{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)});
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = lane < WARPS ? sh[lane] : MS{-INFINITY, 0.f};
    for (int o = 16; o > 0; o >>= 1) v = merge(v, MS{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)});
    return v;
}

// Conversions of one element and of a pair, for both 16-bit types.
__device__ float to_f(__half h) { return __half2float(h); }
__device__ float to_f(__nv_bfloat16 h) { return __bfloat162float(h); }
__device__ float2 to_f2(unsigned int u, __half) { return __half22float2(*reinterpret_cast<__half2 *>(&u)); }
// Each half widened on its own: __bfloat1622float2 is not declared below sm_80 (CUDA 11.8), __bfloat162float is.
__device__ float2 to_f2(unsigned int u, __nv_bfloat16) {
    __nv_bfloat162 h = *reinterpret_cast<__nv_bfloat162 *>(&u);
    return make_float2(__bfloat162float(h.x), __bfloat162float(h.y));
}
__device__ void from_f(float v, __half *p) { *p = __float2half_rn(v); }
__device__ void from_f(float v, __nv_bfloat16 *p) { *p = __float2bfloat16_rn(v); }
__device__ unsigned int from_f2(float a, float b, __half) {
    __half2 h = __floats2half2_rn(a, b);
    return *reinterpret_cast<unsigned int *>(&h);
}
__device__ unsigned int from_f2(float a, float b, __nv_bfloat16) {
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<unsigned int *>(&h);
}

template <typename T>
__device__ void softmax16(const T *__restrict__ x, T *__restrict__ y, int cols, int vec) {
    __shared__ MS sh[WARPS];
    const T *xr = x + (long long)blockIdx.x * cols;
    T *yr = y + (long long)blockIdx.x * cols;
    MS p{-INFINITY, 0.f};
    if (vec) {
        const uint4 *x8 = reinterpret_cast<const uint4 *>(xr);
        for (int j = threadIdx.x; j < cols / 8; j += THREADS) {
            const uint4 q = x8[j];
            const float2 a = to_f2(q.x, T()), b = to_f2(q.y, T()), c = to_f2(q.z, T()), d = to_f2(q.w, T());
            const float m = fmaxf(p.m, fmaxf(fmaxf(fmaxf(a.x, a.y), fmaxf(b.x, b.y)), fmaxf(fmaxf(c.x, c.y), fmaxf(d.x, d.y)))), e = safe(m);
            p.s = p.s * expf(p.m - e) + expf(a.x - e) + expf(a.y - e) + expf(b.x - e) + expf(b.y - e) +
                  expf(c.x - e) + expf(c.y - e) + expf(d.x - e) + expf(d.y - e);
            p.m = m;
        }
    } else {
        for (int j = threadIdx.x; j < cols; j += THREADS) {
            const float v = to_f(xr[j]), m = fmaxf(p.m, v), e = safe(m);
            p.s = p.s * expf(p.m - e) + expf(v - e);
            p.m = m;
        }
    }
    p = block_merge(p, sh);
    const float m = p.m, inv = 1.f / p.s;
    if (vec) {
        const uint4 *x8 = reinterpret_cast<const uint4 *>(xr);
        uint4 *y8 = reinterpret_cast<uint4 *>(yr);
        for (int j = threadIdx.x; j < cols / 8; j += THREADS) {
            const uint4 q = x8[j];
            const float2 a = to_f2(q.x, T()), b = to_f2(q.y, T()), c = to_f2(q.z, T()), d = to_f2(q.w, T());
            y8[j] = make_uint4(from_f2(expf(a.x - m) * inv, expf(a.y - m) * inv, T()), from_f2(expf(b.x - m) * inv, expf(b.y - m) * inv, T()),
                               from_f2(expf(c.x - m) * inv, expf(c.y - m) * inv, T()), from_f2(expf(d.x - m) * inv, expf(d.y - m) * inv, T()));
        }
    } else {
        for (int j = threadIdx.x; j < cols; j += THREADS) from_f(expf(to_f(xr[j]) - m) * inv, yr + j);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) softmax_f16(const __half *x, __half *y, int rows, int cols, int vec) {
    softmax16<__half>(x, y, cols, vec);
}
extern "C" __global__ void __launch_bounds__(THREADS) softmax_bf16(const __nv_bfloat16 *x, __nv_bfloat16 *y, int rows, int cols, int vec) {
    softmax16<__nv_bfloat16>(x, y, cols, vec);
}

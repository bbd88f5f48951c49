// Step 4, 16-bit features: feats and out stored as half (binary16) or bfloat16, the points and all
// arithmetic in float. Half the bytes of step 3 for the same work, so about half the time on a
// memory-bound kernel; the price is the storage precision (11 significant bits for half, 8 for
// bfloat16, whose float-sized exponent never overflows). The output is rounded once, from float.
//
// Same launch as step 3, but each thread loads 16 bytes = EIGHT features (a uint4 viewed as four
// half2 / bfloat162 pairs, widened with __half22float2 / two __bfloat162float) and stores eight.
// Limits of the vector kernels (tri_fw_f16, tri_fw_bf16): F % 8 == 0 and 16-byte aligned feats and
// out. The scalar kernels (tri_fw_f16_any, tri_fw_bf16_any) take any F: step 2's flat mapping, one
// feature per thread.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

__device__ __forceinline__ float clamp1(float x) { return x < -1.f ? -1.f : (x > 1.f ? 1.f : x); }

__device__ __forceinline__ float corner_weight(const float *p, int k) {
    const float u = (clamp1(p[0]) + 1.f) * 0.5f, v = (clamp1(p[1]) + 1.f) * 0.5f, w = (clamp1(p[2]) + 1.f) * 0.5f;
    return ((k & 4) ? u : 1.f - u) * ((k & 2) ? v : 1.f - v) * ((k & 1) ? w : 1.f - w);
}

__device__ __forceinline__ float2 widen(__half2 h) { return __half22float2(h); }
// Each half widened on its own: __bfloat1622float2 is not declared below sm_80 (CUDA 11.8), __bfloat162float is.
__device__ __forceinline__ float2 widen(__nv_bfloat162 h) { return make_float2(__bfloat162float(h.x), __bfloat162float(h.y)); }
__device__ __forceinline__ void narrow(float2 f, __half2 &h) { h = __floats2half2_rn(f.x, f.y); }
__device__ __forceinline__ void narrow(float2 f, __nv_bfloat162 &h) { h = __floats2bfloat162_rn(f.x, f.y); }
__device__ __forceinline__ float widen1(__half h) { return __half2float(h); }
__device__ __forceinline__ float widen1(__nv_bfloat16 h) { return __bfloat162float(h); }
__device__ __forceinline__ void narrow1(float f, __half &h) { h = __float2half_rn(f); }
__device__ __forceinline__ void narrow1(float f, __nv_bfloat16 &h) { h = __float2bfloat16_rn(f); }

// T2 is the pair type (__half2 or __nv_bfloat162).
template <typename T2>
__device__ void fw_vec8(const uint4 *__restrict__ feats, const float *__restrict__ points, uint4 *__restrict__ out, int N, int F) {
    __shared__ float ws[32][8];
    const int F8 = F >> 3;
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const long long n0 = (long long)blockIdx.x * blockDim.y;
    if (tid < 8 * (int)blockDim.y) {
        const long long p = n0 + (tid >> 3);
        if (p < N) ws[tid >> 3][tid & 7] = corner_weight(points + p * 3, tid & 7);
    }
    __syncthreads();
    const long long n = n0 + threadIdx.y;
    if (n >= N) return;
    float wk[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) wk[k] = ws[threadIdx.y][k];
    const uint4 *row = feats + n * 8 * F8;
    for (int f = threadIdx.x; f < F8; f += blockDim.x) {
        uint4 x[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) x[k] = __ldcs(row + k * F8 + f);
        float2 acc[4] = {};
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            const T2 *h = reinterpret_cast<const T2 *>(&x[k]);
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float2 v = widen(h[j]);
                acc[j].x = fmaf(wk[k], v.x, acc[j].x);
                acc[j].y = fmaf(wk[k], v.y, acc[j].y);
            }
        }
        uint4 o;
        T2 *oh = reinterpret_cast<T2 *>(&o);
#pragma unroll
        for (int j = 0; j < 4; ++j) narrow(acc[j], oh[j]);
        __stcs(out + n * F8 + f, o);
    }
}

// T is the scalar type (__half or __nv_bfloat16).
template <typename T>
__device__ void fw_any(const T *__restrict__ feats, const float *__restrict__ points, T *__restrict__ out, int N, int F) {
    const long long total = (long long)N * F;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        const long long n = i / F, f = i - n * F;
        const float *p = points + n * 3;
        const T *x = feats + n * 8 * F + f;
        float o = 0.f;
#pragma unroll
        for (int k = 0; k < 8; ++k) o = fmaf(corner_weight(p, k), widen1(x[k * (long long)F]), o);
        narrow1(o, out[i]);
    }
}

extern "C" __global__ void tri_fw_f16(const uint4 *feats, const float *points, uint4 *out, int N, int F) {
    fw_vec8<__half2>(feats, points, out, N, F);
}
extern "C" __global__ void tri_fw_bf16(const uint4 *feats, const float *points, uint4 *out, int N, int F) {
    fw_vec8<__nv_bfloat162>(feats, points, out, N, F);
}
extern "C" __global__ void tri_fw_f16_any(const __half *feats, const float *points, __half *out, int N, int F) {
    fw_any<__half>(feats, points, out, N, F);
}
extern "C" __global__ void tri_fw_bf16_any(const __nv_bfloat16 *feats, const float *points, __nv_bfloat16 *out, int N, int F) {
    fw_any<__nv_bfloat16>(feats, points, out, N, F);
}

// Step 4 (ours): half and bfloat16 boxes read as they are, no cast pass.
//
// The article casts pred (bfloat16 under autocast) and targets to float32 before its kernel: two more
// kernels, each reading and writing the whole padded batch. Here the kernel takes 16-bit boxes and
// widens them in registers: a box is 8 bytes, one uint2 load seen as two __half2 / __nv_bfloat162
// pairs, converted with __half22float2 / two __bfloat162float; the arithmetic and the loss stay float32.
// Everything else is step 3: one block per image, valid boxes only, block sum, last-block mean.
//
// Rounding: a coordinate near 200 keeps 0.125 (half) or 1.0 (bfloat16) of resolution, so a narrow
// predicted box may round to zero width; the GIoU formula's clamps keep such a box finite (GIoU 0 or
// below, no NaN). The check compares with the float64 loss of the ROUNDED boxes: the kernel's error is
// its float32 arithmetic, not the storage.
//
// Launch: step 3's (grid min(B, 4096), partial 2 x grid words). Limits: giou_mean_f16 / giou_mean_bf16 need 8-byte aligned pred and target
// (the host checks and falls back to the _any kernels, four 2-byte loads per box).
#include <cuda_fp16.h>
#include <cuda_bf16.h>
// Huge boxes: where a pair's largest width or height passes 2^16 the GIoU is computed in a frame
// scaled by a power of two (frame_scale), where no area, and no product of areas, overflows float32:
// every box with finite coordinates (|x| < 1.7e38) gets a finite loss and gradient. Below 2^16
// s = 1 and the arithmetic is the same.
#define EPS 1e-5f

struct Box {
    float x1, y1, x2, y2;
};

// frame_scale is 1 when m, the largest width or height of a pair of boxes (the enclosure's, or an
// inverted box's own), is at most 2^16, as for every image of ordinary size; past that it is the
// power of two that brings m under 2^16. GIoU is a ratio of areas, so it is the same in a frame
// scaled by s (exactly: s is a power of two) with the clamp eps scaled by s^2, and its gradient
// is s times the scaled frame's. Unscaled, a box at 1e20 has an area of 1e40, over float32's
// 3.4e38: Inf / Inf gave a NaN loss for a finite box. Coordinates must keep their
// differences finite (|x| < 1.7e38).
__device__ __forceinline__ float frame_scale(float m) {
    if (!(m > 65536.f) || isinf(m)) return 1.f;
    int e;
    frexpf(m, &e); // m = f 2^e, f in [0.5, 1)
    return ldexpf(1.f, 16 - e);
}

// giou of (p, t) in the frame scaled by frame_scale (the same as unscaled below 2^16).
__device__ __forceinline__ float giou(Box p, Box t) {
    float aw = p.x2 - p.x1, ah = p.y2 - p.y1, tw = t.x2 - t.x1, th = t.y2 - t.y1;
    float iw = fmaxf(fminf(p.x2, t.x2) - fmaxf(p.x1, t.x1), 0.f);
    float ih = fmaxf(fminf(p.y2, t.y2) - fmaxf(p.y1, t.y1), 0.f);
    float ew = fmaxf(fmaxf(p.x2, t.x2) - fminf(p.x1, t.x1), 0.f);
    float eh = fmaxf(fmaxf(p.y2, t.y2) - fminf(p.y1, t.y1), 0.f);
    const float s = frame_scale(fmaxf(fmaxf(fmaxf(fabsf(aw), fabsf(ah)), fmaxf(fabsf(tw), fabsf(th))), fmaxf(ew, eh)));
    const float eps = fmaxf(EPS * s * s, 1e-38f); // EPS when s = 1
    aw *= s, ah *= s, tw *= s, th *= s, iw *= s, ih *= s, ew *= s, eh *= s;
    const float a1 = aw * ah;
    const float a2 = tw * th;
    const float inter = iw * ih;
    const float uni = a1 + a2 - inter;
    const float enc = ew * eh;
    return inter / fmaxf(uni, eps) - (enc - uni) / fmaxf(enc, eps);
}

__device__ __forceinline__ float2 widen2(__half2 h) { return __half22float2(h); }
// Each half widened on its own: __bfloat1622float2 is not declared below sm_80 (CUDA 11.8), __bfloat162float is.
__device__ __forceinline__ float2 widen2(__nv_bfloat162 h) { return make_float2(__bfloat162float(h.x), __bfloat162float(h.y)); }
__device__ __forceinline__ float widen1(__half h) { return __half2float(h); }
__device__ __forceinline__ float widen1(__nv_bfloat16 h) { return __bfloat162float(h); }

// Box i of a 16-bit array: T is __half or __nv_bfloat16, T2 its pair type.
template <typename T, typename T2, bool VEC>
__device__ __forceinline__ Box load_box(const T *b, long long i) {
    if (VEC) {
        const uint2 raw = reinterpret_cast<const uint2 *>(b)[i];
        const float2 lo = widen2(*reinterpret_cast<const T2 *>(&raw.x));
        const float2 hi = widen2(*reinterpret_cast<const T2 *>(&raw.y));
        return Box{lo.x, lo.y, hi.x, hi.y};
    }
    return Box{widen1(b[4 * i]), widen1(b[4 * i + 1]), widen1(b[4 * i + 2]), widen1(b[4 * i + 3])};
}

template <typename T>
__device__ __forceinline__ T block_sum(T v, T *sh) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < (blockDim.x >> 5) ? sh[threadIdx.x] : T(0);
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    return v;
}

// Last-block finish, called by every block with its sum and its box count (thread 0's). partial
// holds 2*gridDim.x words: the blocks' float sums, then their counts as unsigned ints.
__device__ __forceinline__ void finish_mean(float block_total, unsigned int block_count, float *partial, unsigned int *done,
                                            float *loss, float *sh) {
    __shared__ bool last;
    __shared__ long long shc[32];
    const unsigned int G = gridDim.x;
    unsigned int *pcount = reinterpret_cast<unsigned int *>(partial + G);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = block_total;
        pcount[blockIdx.x] = block_count;
        __threadfence();  // both are visible device-wide before the ticket is taken
        last = atomicAdd(done, 1u) == G - 1;
    }
    __syncthreads();
    if (!last) return;
    float s = 0.f;
    long long c = 0;
    for (unsigned int i = threadIdx.x; i < G; i += blockDim.x) {
        s += __ldcg(partial + i);  // from L2: written by other blocks
        c += __ldcg(pcount + i);
    }
    s = block_sum(s, sh);
    c = block_sum(c, shc);
    if (threadIdx.x == 0) {
        loss[0] = c > 0 ? s / (float)c : 0.f;
        *done = 0u;  // ready for the next launch
    }
}

template <typename T, typename T2, bool VEC>
__device__ __forceinline__ void mean16(const T *__restrict__ pred, const T *__restrict__ target, const int *__restrict__ counts,
                                       float *partial, unsigned int *done, float *loss, int B, int M) {
    __shared__ float sh[32];
    float s = 0.f;
    unsigned int cnt = 0;
    for (int b = blockIdx.x; b < B; b += gridDim.x) {
        const int n = min(max(counts[b], 0), M);
        const long long base = (long long)b * M;
        cnt += n;
        for (int j = threadIdx.x; j < n; j += blockDim.x)
            s += 1.f - giou(load_box<T, T2, VEC>(pred, base + j), load_box<T, T2, VEC>(target, base + j));
    }
    s = block_sum(s, sh);
    finish_mean(s, cnt, partial, done, loss, sh);
}

#define MEAN16(name, T, T2, VEC)                                                                                        \
    extern "C" __global__ void name(const T *__restrict__ pred, const T *__restrict__ target, const int *__restrict__ counts, \
                                    float *partial, unsigned int *done, float *loss, int B, int M) {                     \
        mean16<T, T2, VEC>(pred, target, counts, partial, done, loss, B, M);                                             \
    }

MEAN16(giou_mean_f16, __half, __half2, true)
MEAN16(giou_mean_f16_any, __half, __half2, false)
MEAN16(giou_mean_bf16, __nv_bfloat16, __nv_bfloat162, true)
MEAN16(giou_mean_bf16_any, __nv_bfloat16, __nv_bfloat162, false)

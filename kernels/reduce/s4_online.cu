// Softmax step 4: the online softmax. One pass over the row finds the maximum AND the sum; a
// second pass writes.
//
// What changed from step 3: each thread keeps a running pair (m, s): the largest value seen so far
// and the sum of exp(x - m) over the values seen. When a larger value m' arrives, the sum so far is
// rescaled by exp(m - m') and the pair becomes (m', s * exp(m - m') + exp(x - m')). Two pairs merge
// the same way: m = max(m1, m2), s = s1 exp(m1 - m) + s2 exp(m2 - m). So the max pass and the sum
// pass become one, and the block reduces pairs (shuffles, then shared memory) once.
// Why it is faster: two reads of the row instead of three (and the second one often comes from
// L2: the row was read moments before by the same block). The extra exp per rescale is free in a
// kernel that waits on memory.
// Masked entries (-inf, an attention mask): while a thread has seen only -inf its max is -inf, and
// exp(-inf - -inf) would be NaN. The exponents are taken against safe(m), 0 for an empty pair, so
// -inf entries add exactly 0 and a NaN entry still makes the sum NaN (as in PyTorch, a row with a
// NaN or a +inf is NaN; a row all -inf is NaN too: the write's exp(-inf - -inf)).
// Launch: grid rows, block 512. Limits: any cols >= 1, any alignment: with vec = 1 (cols % 4 == 0
// and x, y 16-byte aligned, checked by the plan) it moves float4s, otherwise single floats.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)  // NVRTC has no <math.h>: +infinity from its bits
#endif
#define THREADS 512
#define WARPS (THREADS / 32)

struct MS {
    float m, s;
};

// safe is the max the exponents are taken against: 0 while only -inf was seen (exp(-inf - 0) = 0).
__device__ float safe(float m) { return m == -INFINITY ? 0.f : m; }

// merge combines two running (max, sum) pairs into the pair of their union. Two empty pairs keep
// their sums added: 0, or NaN when a NaN entry was seen.
__device__ MS merge(MS a, MS b) {
    const float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return MS{m, a.s + b.s};  // both empty
    return MS{m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

__device__ MS block_merge(MS v, MS *sh) {
    for (int o = 16; o > 0; o >>= 1) {
        MS u{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
        v = merge(v, u);
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = lane < WARPS ? sh[lane] : MS{-INFINITY, 0.f};
    for (int o = 16; o > 0; o >>= 1) {
        MS u{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
        v = merge(v, u);
    }
    return v;
}

extern "C" __global__ void __launch_bounds__(THREADS) softmax_online(const float *__restrict__ x, float *__restrict__ y, int rows, int cols, int vec) {
    __shared__ MS sh[WARPS];
    const float *xr = x + (long long)blockIdx.x * cols;
    float *yr = y + (long long)blockIdx.x * cols;
    MS p{-INFINITY, 0.f};
    if (vec) {
        const float4 *x4 = reinterpret_cast<const float4 *>(xr);
        for (int j = threadIdx.x; j < cols / 4; j += THREADS) {
            const float4 v = x4[j];
            const float m = fmaxf(p.m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w))), e = safe(m);
            p.s = p.s * expf(p.m - e) + expf(v.x - e) + expf(v.y - e) + expf(v.z - e) + expf(v.w - e);
            p.m = m;
        }
    } else {
        for (int j = threadIdx.x; j < cols; j += THREADS) {
            const float v = xr[j], m = fmaxf(p.m, v), e = safe(m);
            p.s = p.s * expf(p.m - e) + expf(v - e);
            p.m = m;
        }
    }
    p = block_merge(p, sh);
    const float m = p.m, inv = 1.f / p.s;
    if (vec) {
        const float4 *x4 = reinterpret_cast<const float4 *>(xr);
        float4 *y4 = reinterpret_cast<float4 *>(yr);
        for (int j = threadIdx.x; j < cols / 4; j += THREADS) {
            const float4 v = x4[j];
            y4[j] = make_float4(expf(v.x - m) * inv, expf(v.y - m) * inv, expf(v.z - m) * inv, expf(v.w - m) * inv);
        }
    } else {
        for (int j = threadIdx.x; j < cols; j += THREADS) yr[j] = expf(xr[j] - m) * inv;
    }
}

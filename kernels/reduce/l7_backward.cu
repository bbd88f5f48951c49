// Layer norm backward: dx, dw and db from dy, with the mean and rstd saved by the forward.
//
// With xhat = (x - mean) * rstd and g = dy * w, the gradients are
//   dx = rstd * (g - mean_j(g) - xhat * mean_j(g * xhat))      (means over the M elements of a sample)
//   dw = sum_n dy * xhat,   db = sum_n dy                        (sums over the N samples)
// The two per-sample means are reductions like the forward's: ln_bwd_partials adds g and g * xhat
// over P parts of each sample (grid P x N), ln_bwd_finalize merges the P partials of each sample.
// ln_bwd_dx then walks the samples the way the fused forward does: a thread owns a float4 column,
// loads w there once, and for every sample writes dx while it accumulates dw and db in registers,
// so dw and db need no atomics and no second pass.
// Traffic: x and dy twice, w twice, dx once, dw and db once.
// Launch: ln_bwd_partials grid (P, N), ln_bwd_finalize grid N, ln_bwd_dx grid-stride over the
// columns (M/4 float4 columns when vec = 1, M columns when vec = 0); block 256 each.
// Range: ln_bwd_partials sums g * xhat, xhat = (x - mean) * rstd formed first, like ln_bwd_dx's,
// rather than g * (x - mean) times rstd at the end: with x near 1e30 (the forward's slow path gives
// rstd near 1e-30) the product g * (x - mean) overflowed float32 once |dy w| passed about 1e8;
// xhat is O(1) on every sample, so the sums stay as large as dy itself (one more multiply per
// element, hidden behind the memory traffic).
// Limits: vec = 1 needs M % 4 == 0 and 16-byte aligned x, dy, w, dx (vec = 0 takes any M and
// alignment, the autograd op's fallback); M < 2^24, like the forward's statistics.
#define THREADS 256

__device__ float block_sum(float v, float *sh) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    v = threadIdx.x % 32 < THREADS / 32 ? sh[threadIdx.x % 32] : 0.f;  // every warp reduces the warps' values: all threads get the sum
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    return v;
}

__device__ void part_of(int M, int P, int *lo, int *hi) {
    const int chunk = ((M + P - 1) / P + 3) / 4 * 4;
    *lo = min(M, blockIdx.x * chunk);
    *hi = min(M, *lo + chunk);
}

extern "C" __global__ void __launch_bounds__(THREADS) ln_bwd_partials(const float *__restrict__ x, const float *__restrict__ dy, const float *__restrict__ w,
                                                                     const float *__restrict__ mean_in, const float *__restrict__ rstd_in,
                                                                     float *__restrict__ partials, int M, int P, int vec) {
    __shared__ float sh[32];
    const int n = blockIdx.y;
    const float mean = mean_in[n], rstd = rstd_in[n];
    const float4 *x4 = reinterpret_cast<const float4 *>(x + (long long)n * M), *d4 = reinterpret_cast<const float4 *>(dy + (long long)n * M);
    const float4 *w4 = reinterpret_cast<const float4 *>(w);
    int lo, hi;
    part_of(M, P, &lo, &hi);
    float s1 = 0.f, s2 = 0.f;
    if (vec) {
        for (int j = lo / 4 + threadIdx.x; j < hi / 4; j += THREADS) {
            const float4 v = x4[j], d = d4[j], g = w4[j];
            const float gx = d.x * g.x, gy = d.y * g.y, gz = d.z * g.z, gw = d.w * g.w;
            s1 += (gx + gy) + (gz + gw);
            s2 += (gx * ((v.x - mean) * rstd) + gy * ((v.y - mean) * rstd)) + (gz * ((v.z - mean) * rstd) + gw * ((v.w - mean) * rstd));
        }
    } else {
        const float *xs = x + (long long)n * M, *ds = dy + (long long)n * M;
        for (int j = lo + threadIdx.x; j < hi; j += THREADS) {
            const float g = ds[j] * w[j];
            s1 += g;
            s2 += g * ((xs[j] - mean) * rstd);
        }
    }
    s1 = block_sum(s1, sh);
    s2 = block_sum(s2, sh);
    if (threadIdx.x == 0) {
        partials[2 * (n * P + blockIdx.x)] = s1;
        partials[2 * (n * P + blockIdx.x) + 1] = s2;
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) ln_bwd_finalize(const float *__restrict__ partials, float *__restrict__ c, int M, int P) {
    __shared__ float sh[32];
    float s1 = 0.f, s2 = 0.f;
    for (int i = threadIdx.x; i < P; i += THREADS) {
        s1 += partials[2 * (blockIdx.x * P + i)];
        s2 += partials[2 * (blockIdx.x * P + i) + 1];
    }
    s1 = block_sum(s1, sh);
    s2 = block_sum(s2, sh);
    if (threadIdx.x == 0) {
        c[2 * blockIdx.x] = s1 / M;
        c[2 * blockIdx.x + 1] = s2 / M;
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) ln_bwd_dx(const float *__restrict__ x, const float *__restrict__ dy, const float *__restrict__ w,
                                                               const float *__restrict__ mean_in, const float *__restrict__ rstd_in, const float *__restrict__ c,
                                                               float *__restrict__ dx, float *__restrict__ dw, float *__restrict__ db, int N, int M, int vec) {
    if (!vec) { // one column per thread
        for (int j = blockIdx.x * THREADS + threadIdx.x; j < M; j += gridDim.x * THREADS) {
            const float g = w[j];
            float aw = 0.f, ab = 0.f;
            for (int n = N - 1; n >= 0; --n) {
                const long long i = (long long)n * M + j;
                const float h = (x[i] - mean_in[n]) * rstd_in[n], d = dy[i];
                dx[i] = rstd_in[n] * (d * g - c[2 * n] - h * c[2 * n + 1]);
                aw += d * h;
                ab += d;
            }
            dw[j] = aw;
            db[j] = ab;
        }
        return;
    }
    const float4 *w4 = reinterpret_cast<const float4 *>(w);
    for (int j = blockIdx.x * THREADS + threadIdx.x; j < M / 4; j += gridDim.x * THREADS) {
        const float4 g = w4[j];
        float4 aw = make_float4(0.f, 0.f, 0.f, 0.f), ab = aw;
        for (int n = N - 1; n >= 0; --n) {
            const float mean = mean_in[n], rstd = rstd_in[n], c1 = c[2 * n], c2 = c[2 * n + 1];
            const float4 v = reinterpret_cast<const float4 *>(x + (long long)n * M)[j];
            const float4 d = reinterpret_cast<const float4 *>(dy + (long long)n * M)[j];
            const float hx = (v.x - mean) * rstd, hy = (v.y - mean) * rstd, hz = (v.z - mean) * rstd, hw = (v.w - mean) * rstd;
            reinterpret_cast<float4 *>(dx + (long long)n * M)[j] =
                make_float4(rstd * (d.x * g.x - c1 - hx * c2), rstd * (d.y * g.y - c1 - hy * c2), rstd * (d.z * g.z - c1 - hz * c2), rstd * (d.w * g.w - c1 - hw * c2));
            aw.x += d.x * hx, aw.y += d.y * hy, aw.z += d.z * hz, aw.w += d.w * hw;
            ab.x += d.x, ab.y += d.y, ab.z += d.z, ab.w += d.w;
        }
        reinterpret_cast<float4 *>(dw)[j] = aw;
        reinterpret_cast<float4 *>(db)[j] = ab;
    }
}

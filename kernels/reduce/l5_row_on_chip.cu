// Layer norm step 5: the whole sample stays on chip, so x is read from memory once.
//
// What changed from step 4: steps 2-4 read x twice (once for the statistics, once to normalise),
// because at the article's shape a sample (16 MB) is far larger than one SM. Most layer norms in
// models are short: 768 to 16384 values per token. There a sample fits in one warp's registers or
// one block's shared memory, and one kernel can load it once, reduce, normalise and write: the
// traffic drops to its minimum (x read once, y written once), and there is one launch instead of
// three. Holding the values also makes the exact two-pass variance free: the mean first, then the
// sum of squared deviations from it, with no Welford bookkeeping.
// Shifted sums: both passes run on x - K, K the sample's first value (every thread reads it, one
// broadcast load). A large offset then costs nothing: x - K is exact for x within a factor of 2 of K
// (Sterbenz), the mean of the shifted values is small, and the deviations (x - K) - mean' are
// computed without ever rounding a mean of size |x|. Unshifted, the float32 mean of short samples
// with a large offset is off by up to an ulp of the offset, a large share of a short sample's own
// spread: x of shape (65536, 3), mean 1000, std 0.1 put 1310 of 196608 outputs outside the check,
// max error 0.028, while the Welford steps passed. The saved mean is K + mean'.
//   ln_warp_rows: M <= 1024. One warp per sample, eight samples per 256-thread block, up to 32
//     values per lane in registers; the two sums are warp shuffles, no shared memory, no
//     __syncthreads. This is the shape where steps 2-4 lose to PyTorch: a block of 256 threads on
//     a row of 1024 spends its time in barriers and launches.
//   ln_block_row: 1024 < M <= what dynamic shared memory holds (about 57K floats on an H100). One
//     block of 512 threads per sample; the row is staged in shared memory as it is loaded.
// Out of range, made exact: a sample whose squared deviations overflow float32 (deviations from its
// mean beyond about 1.8e19, inputs near 1e20..1e30) has an infinite sum of squares and a finite
// mean. Only then (a branch uniform over the warp or block, never taken on ordinary inputs) a second
// pass over the values still on chip sums ((x - K - mean) * 2^-80)^2: every deviation of a float32
// sample fits that scale (the sum lies in [2^-32, 2^122]), and layer norm is scale-invariant apart
// from eps, so rstd = 2^-80 / sqrt(q / M + eps * 2^-160). eps * 2^-160 is below float32's smallest
// subnormal and under 2^-100 of q / M there, so dropping it is exact to float32 as in float64. A
// sample with an inf or NaN entry still gives NaN outputs (rstd_of), as in PyTorch.
// Launch: ln_warp_rows grid ceil(N / 8), block 256; ln_block_row grid N, block 512, dynamic shared
// memory 4 * M bytes (over 48 KB needs the opt-in, which the lab's launcher sets). vec = 1 (float4)
// needs M % 4 == 0 and 16-byte aligned x, y, w, b; vec = 0 takes any M and alignment. The backward
// (step 7) recomputes x - mean from the saved mean, so it does not get this shift's accuracy.
#define WARP_ROWS 8
#define PER_LANE 32 // floats per lane in ln_warp_rows: M <= 32 * 32
#define ROW_THREADS 512
#define SLOW_SCALE 0x1p-80f // the slow path's scale, 2^-80 (see the header)
// rstd_of is 1 / sqrt(var + eps), or NaN when the variance is infinite (after the slow path, only a
// sample with an inf or NaN entry): rsqrt(inf) = 0 would silently give every output the bias.
__device__ float rstd_of(float var, float eps) { return var == __int_as_float(0x7f800000) ? __int_as_float(0x7fffffff) : rsqrtf(var + eps); }

__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void __launch_bounds__(WARP_ROWS * 32) ln_warp_rows(const float *__restrict__ x, const float *__restrict__ w, const float *__restrict__ b,
                                                                         float *__restrict__ y, float *__restrict__ mean_out, float *__restrict__ rstd_out,
                                                                         int N, int M, float eps, int vec) {
    const int lane = threadIdx.x % 32;
    const int n = blockIdx.x * WARP_ROWS + threadIdx.x / 32;
    if (n >= N) return; // the whole warp leaves together: no shuffle waits on it
    const float *xs = x + (long long)n * M;
    float *ys = y + (long long)n * M;
    const float K = xs[0]; // the shift (see the header)
    float v[PER_LANE];     // x - K: lane holds float4 number lane + 32 i (vec) or value lane + 32 i; 0 past M
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < PER_LANE / 4; ++i) {
        if (vec) {
            const int j = i * 32 + lane;
            if (j < M / 4) {
                const float4 q = reinterpret_cast<const float4 *>(xs)[j];
                v[4 * i] = q.x - K, v[4 * i + 1] = q.y - K, v[4 * i + 2] = q.z - K, v[4 * i + 3] = q.w - K;
            } else {
                v[4 * i] = v[4 * i + 1] = v[4 * i + 2] = v[4 * i + 3] = 0.f;
            }
        } else {
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const int j = (4 * i + k) * 32 + lane;
                v[4 * i + k] = j < M ? xs[j] - K : 0.f;
            }
        }
        s += (v[4 * i] + v[4 * i + 1]) + (v[4 * i + 2] + v[4 * i + 3]);
    }
    const float mean = warp_sum(s) / M; // of the shifted values
    float q = 0.f;
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) {
        const int j = vec ? 4 * ((i / 4) * 32 + lane) + i % 4 : i * 32 + lane; // the element v[i] holds
        const float d = j < M ? v[i] - mean : 0.f;
        q += d * d;
    }
    q = warp_sum(q); // the same in every lane: the branch below is uniform over the warp
    float rstd;
    if (isinf(q) && isfinite(mean)) { // the slow path: the squares overflowed (see the header)
        float r = 0.f;
#pragma unroll
        for (int i = 0; i < PER_LANE; ++i) {
            const int j = vec ? 4 * ((i / 4) * 32 + lane) + i % 4 : i * 32 + lane;
            const float d = j < M ? v[i] * SLOW_SCALE - mean * SLOW_SCALE : 0.f;
            r += d * d;
        }
        rstd = SLOW_SCALE * rsqrtf(warp_sum(r) / M);
    } else {
        rstd = rstd_of(q / M, eps);
    }
#pragma unroll
    for (int i = 0; i < PER_LANE / 4; ++i) {
        if (vec) {
            const int j = i * 32 + lane;
            if (j < M / 4) {
                const float4 g = reinterpret_cast<const float4 *>(w)[j], c = reinterpret_cast<const float4 *>(b)[j];
                reinterpret_cast<float4 *>(ys)[j] = make_float4((v[4 * i] - mean) * rstd * g.x + c.x, (v[4 * i + 1] - mean) * rstd * g.y + c.y,
                                                                (v[4 * i + 2] - mean) * rstd * g.z + c.z, (v[4 * i + 3] - mean) * rstd * g.w + c.w);
            }
        } else {
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const int j = (4 * i + k) * 32 + lane;
                if (j < M) ys[j] = (v[4 * i + k] - mean) * rstd * w[j] + b[j];
            }
        }
    }
    if (lane == 0) mean_out[n] = K + mean, rstd_out[n] = rstd;
}

// block_sum returns the sum of v over the block to every thread.
__device__ float block_sum(float v, float *sh) {
    v = warp_sum(v);
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    v = warp_sum(threadIdx.x % 32 < ROW_THREADS / 32 ? sh[threadIdx.x % 32] : 0.f);
    __syncthreads(); // sh is reused by the next sum
    return v;
}

extern "C" __global__ void __launch_bounds__(ROW_THREADS) ln_block_row(const float *__restrict__ x, const float *__restrict__ w, const float *__restrict__ b,
                                                                      float *__restrict__ y, float *__restrict__ mean_out, float *__restrict__ rstd_out,
                                                                      int M, float eps, int vec) {
    extern __shared__ float4 row4[];
    float *row = reinterpret_cast<float *>(row4);
    __shared__ float sh[32];
    const int n = blockIdx.x;
    const float *xs = x + (long long)n * M;
    float *ys = y + (long long)n * M;
    const float K = xs[0]; // the shift (see the header): row[] holds x - K
    float s = 0.f;
    if (vec) {
        for (int j = threadIdx.x; j < M / 4; j += ROW_THREADS) {
            const float4 x4 = reinterpret_cast<const float4 *>(xs)[j];
            const float4 q = make_float4(x4.x - K, x4.y - K, x4.z - K, x4.w - K);
            row4[j] = q;
            s += (q.x + q.y) + (q.z + q.w);
        }
    } else {
        for (int j = threadIdx.x; j < M; j += ROW_THREADS) s += row[j] = xs[j] - K;
    }
    const float mean = block_sum(s, sh) / M; // of the shifted values; block_sum's barrier also publishes row[]
    float q = 0.f;
    for (int j = threadIdx.x; j < M; j += ROW_THREADS) {
        const float d = row[j] - mean;
        q += d * d;
    }
    q = block_sum(q, sh); // the same in every thread: the branch below is uniform over the block
    float rstd;
    if (isinf(q) && isfinite(mean)) { // the slow path: the squares overflowed (see the header)
        float r = 0.f;
        for (int j = threadIdx.x; j < M; j += ROW_THREADS) {
            const float d = row[j] * SLOW_SCALE - mean * SLOW_SCALE;
            r += d * d;
        }
        rstd = SLOW_SCALE * rsqrtf(block_sum(r, sh) / M);
    } else {
        rstd = rstd_of(q / M, eps);
    }
    if (vec) {
        for (int j = threadIdx.x; j < M / 4; j += ROW_THREADS) {
            const float4 v = row4[j], g = reinterpret_cast<const float4 *>(w)[j], c = reinterpret_cast<const float4 *>(b)[j];
            reinterpret_cast<float4 *>(ys)[j] =
                make_float4((v.x - mean) * rstd * g.x + c.x, (v.y - mean) * rstd * g.y + c.y, (v.z - mean) * rstd * g.z + c.z, (v.w - mean) * rstd * g.w + c.w);
        }
    } else {
        for (int j = threadIdx.x; j < M; j += ROW_THREADS) ys[j] = (row[j] - mean) * rstd * w[j] + b[j];
    }
    if (threadIdx.x == 0) mean_out[n] = K + mean, rstd_out[n] = rstd;
}

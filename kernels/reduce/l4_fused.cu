// Layer norm step 4: one normalise-and-affine pass that loads the weight and bias once.
//
// What changed from step 3 (same statistics: ln_welford_partials and ln_welford_finalize of
// l3_welford.cu): in step 3 the block that normalises part p of sample n loads w and b of part p,
// so w and b (16 MB each at the article's shape) are read N = 16 times, mostly from DRAM: 512 MB,
// more than x itself (256 MB). Here a thread owns a float4 column of the normalised dimensions,
// loads w and b there once, and walks down G samples (all 16 at the article's shape): w and b
// cost 32 MB. The samples are walked from the last to the first because the statistics pass ended
// on the last samples: their bytes are the ones still in the 50 MB L2, so the first reads here
// hit the cache before it is overwritten.
// Why it is faster: about 1.4x fewer bytes (x twice, y once, w and b once), the floor of a
// two-pass layer norm; a single pass is impossible here as 256 MB of x does not fit on chip.
// Launch: grid (ceil(M/4 / 256) clipped to the device, ceil(N / G)), block 256, grid-stride over
// the float4 columns. Limits: M % 4 == 0 and 16-byte aligned x, y, w, b (the plan refuses others:
// step 3 takes them).
#define THREADS 256

extern "C" __global__ void __launch_bounds__(THREADS) ln_normalize_fused(const float *__restrict__ x, const float *__restrict__ w, const float *__restrict__ b,
                                                                        float *__restrict__ y, const float *__restrict__ mean_in,
                                                                        const float *__restrict__ rstd_in, int N, int M, int G) {
    const int n0 = blockIdx.y * G, n1 = min(N, n0 + G);
    const float4 *w4 = reinterpret_cast<const float4 *>(w), *b4 = reinterpret_cast<const float4 *>(b);
    for (int j = blockIdx.x * THREADS + threadIdx.x; j < M / 4; j += gridDim.x * THREADS) {
        const float4 g = w4[j], c = b4[j];
        for (int n = n1 - 1; n >= n0; --n) {
            const float mean = mean_in[n], rstd = rstd_in[n];
            const float4 v = reinterpret_cast<const float4 *>(x + (long long)n * M)[j];
            __stcs(reinterpret_cast<float4 *>(y + (long long)n * M) + j,
                   make_float4((v.x - mean) * rstd * g.x + c.x, (v.y - mean) * rstd * g.y + c.y, (v.z - mean) * rstd * g.z + c.z, (v.w - mean) * rstd * g.w + c.w));
        }
    }
}

// Step 2, coalesced: the same arithmetic with the thread mapping turned around. The flat index
// i = n*F + f runs over the output in memory order, so consecutive threads take consecutive
// features of one point (and of the next point when F is small): a warp's load of feats[n][k][f]
// is 32 consecutive floats, 128 bytes, four full sectors. Nothing else changed, and that alone is
// most of the speedup over step 1.
//
// Also new, the lesson's rules for any input: each coordinate is clamped to [-1, 1] (a point outside
// the cell moves to its nearest face; NaN stays NaN), d = v*w exactly, 64-bit indices and a
// grid-stride loop, so any N and F that fit in memory take one launch shape.
//
// Launch: 1-D, blocks of 256, grid = min(ceil(N*F/256), a few waves). Limits: none beyond memory.
// It is the general fallback of the lesson's op for F not a multiple of 4 or unaligned buffers.
__device__ __forceinline__ float clamp1(float x) { return x < -1.f ? -1.f : (x > 1.f ? 1.f : x); }

extern "C" __global__ void tri_fw_coalesced(const float *__restrict__ feats, const float *__restrict__ points,
                                            float *__restrict__ out, int N, int F) {
    const long long total = (long long)N * F;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        const long long n = i / F, f = i - n * F;
        const float u = (clamp1(points[n * 3 + 0]) + 1.f) * 0.5f;
        const float v = (clamp1(points[n * 3 + 1]) + 1.f) * 0.5f;
        const float w = (clamp1(points[n * 3 + 2]) + 1.f) * 0.5f;
        const float a = (1.f - v) * (1.f - w), b = (1.f - v) * w, c = v * (1.f - w), d = v * w;
        const float *x = feats + n * 8 * F + f;
        out[i] = (1.f - u) * (a * x[0] + b * x[(long long)F] + c * x[2LL * F] + d * x[3LL * F]) +
                 u * (a * x[4LL * F] + b * x[5LL * F] + c * x[6LL * F] + d * x[7LL * F]);
    }
}

// Step 6 (beyond the article, which returns None for the points): the gradient of the points.
// With u = (x+1)/2 and the weights products of u, v, w and their complements,
//   dout/du = sum over the u=1 face of a,b,c,d x f minus the same over the u=0 face, and likewise for
//   v and w, so dL/dx = 1/2 * sum_f dL/dout[n][f] * dout[n][f]/du (0 where x was clamped, |x| > 1).
// Unlike every earlier step this is a REDUCTION over F: one number per point from 2F inputs.
//
// Launch: one warp per point, 8 warps (8 points) per block of 256, grid = ceil(N/8). Each lane
// walks features lane, lane+32, ... (float4s with tri_bw_points_float4), accumulates its three
// partial sums in registers, and the warp adds them with five __shfl_xor_sync steps; lane 0 writes
// the point's three numbers. No shared memory, no atomics: one writer per output.
// Limits: tri_bw_points_float4 needs F % 4 == 0 and 16-byte aligned feats and g; tri_bw_points takes
// any F. A small F leaves lanes idle (F = 1: 31 of 32), which costs little at these sizes.
__device__ __forceinline__ float clamp1(float x) { return x < -1.f ? -1.f : (x > 1.f ? 1.f : x); }
__device__ __forceinline__ float inside(float x) { return (x < -1.f || x > 1.f) ? 0.f : 1.f; }

// Adds g * d(out)/d(u,v,w) of one feature, given its eight corner values f[0..7].
__device__ __forceinline__ void accumulate(const float f[8], float g, float u, float v, float w, float &du, float &dv, float &dw) {
    const float a = (1.f - v) * (1.f - w), b = (1.f - v) * w, c = v * (1.f - w), d = v * w;
    du = fmaf(g, (a * f[4] + b * f[5] + c * f[6] + d * f[7]) - (a * f[0] + b * f[1] + c * f[2] + d * f[3]), du);
    dv = fmaf(g, (1.f - u) * ((1.f - w) * (f[2] - f[0]) + w * (f[3] - f[1])) + u * ((1.f - w) * (f[6] - f[4]) + w * (f[7] - f[5])), dv);
    dw = fmaf(g, (1.f - u) * ((1.f - v) * (f[1] - f[0]) + v * (f[3] - f[2])) + u * ((1.f - v) * (f[5] - f[4]) + v * (f[7] - f[6])), dw);
}

__device__ __forceinline__ void finish(const float *p, float *dp, float du, float dv, float dw) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        du += __shfl_xor_sync(0xffffffffu, du, o);
        dv += __shfl_xor_sync(0xffffffffu, dv, o);
        dw += __shfl_xor_sync(0xffffffffu, dw, o);
    }
    if ((threadIdx.x & 31) == 0) {
        dp[0] = 0.5f * inside(p[0]) * du;
        dp[1] = 0.5f * inside(p[1]) * dv;
        dp[2] = 0.5f * inside(p[2]) * dw;
    }
}

extern "C" __global__ void tri_bw_points(const float *__restrict__ feats, const float *__restrict__ points,
                                         const float *__restrict__ g, float *__restrict__ dpoints, int N, int F) {
    const long long n = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (n >= N) return;  // whole warps leave together: the shuffles below see all 32 lanes
    const float *p = points + n * 3;
    const float u = (clamp1(p[0]) + 1.f) * 0.5f, v = (clamp1(p[1]) + 1.f) * 0.5f, w = (clamp1(p[2]) + 1.f) * 0.5f;
    float du = 0.f, dv = 0.f, dw = 0.f;
    const float *row = feats + n * 8 * F;
    for (int f = threadIdx.x & 31; f < F; f += 32) {
        float x[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) x[k] = row[k * (long long)F + f];
        accumulate(x, g[n * F + f], u, v, w, du, dv, dw);
    }
    finish(p, dpoints + n * 3, du, dv, dw);
}

extern "C" __global__ void tri_bw_points_float4(const float4 *__restrict__ feats, const float *__restrict__ points,
                                                const float4 *__restrict__ g, float *__restrict__ dpoints, int N, int F) {
    const long long n = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (n >= N) return;
    const int F4 = F >> 2;
    const float *p = points + n * 3;
    const float u = (clamp1(p[0]) + 1.f) * 0.5f, v = (clamp1(p[1]) + 1.f) * 0.5f, w = (clamp1(p[2]) + 1.f) * 0.5f;
    float du = 0.f, dv = 0.f, dw = 0.f;
    const float4 *row = feats + n * 8 * F4;
    for (int f = threadIdx.x & 31; f < F4; f += 32) {
        float4 x[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) x[k] = __ldcs(row + k * F4 + f);
        const float4 gv = __ldcs(g + n * F4 + f);
        float c[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) c[k] = x[k].x;
        accumulate(c, gv.x, u, v, w, du, dv, dw);
#pragma unroll
        for (int k = 0; k < 8; ++k) c[k] = x[k].y;
        accumulate(c, gv.y, u, v, w, du, dv, dw);
#pragma unroll
        for (int k = 0; k < 8; ++k) c[k] = x[k].z;
        accumulate(c, gv.z, u, v, w, du, dv, dw);
#pragma unroll
        for (int k = 0; k < 8; ++k) c[k] = x[k].w;
        accumulate(c, gv.w, u, v, w, du, dv, dw);
    }
    finish(p, dpoints + n * 3, du, dv, dw);
}

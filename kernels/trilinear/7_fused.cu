// Step 7, a fused training step for the loss L = 1/2 * sum (out - target)^2: ONE pass computes the
// forward, the residual r = out - target (the loss's gradient dL/dout), the per-point loss, dfeats
// = W_k * r and dpoints, with out and r never leaving registers.
//
// Separately (step 3 + the loss gradient + step 5 + step 6) feats is read twice (forward and points
// gradient) and out and dL/dout make round trips through memory; fused, feats is read once and
// dfeats written once: 32F + 4F (target) + 32F bytes per point instead of about 32F + 4F + 12F + 4F
// + 32F + 32F + 4F.
//
// Launch: step 6's, one warp per point, 8 points per block of 256, grid = ceil(N/8). Each lane takes
// features lane, lane+32, ... (float4s in tri_train_fused_float4), writes their eight dfeats values
// and keeps its partial loss and dpoints sums; a warp shuffle reduction finishes both.
// Limits: the float4 kernel needs F % 4 == 0 and 16-byte aligned feats, target and dfeats;
// tri_train_fused takes any F.
__device__ __forceinline__ float clamp1(float x) { return x < -1.f ? -1.f : (x > 1.f ? 1.f : x); }
__device__ __forceinline__ float inside(float x) { return (x < -1.f || x > 1.f) ? 0.f : 1.f; }

struct Point {
    float u, v, w, wk[8];
};

__device__ __forceinline__ Point load_point(const float *p) {
    Point q;
    q.u = (clamp1(p[0]) + 1.f) * 0.5f;
    q.v = (clamp1(p[1]) + 1.f) * 0.5f;
    q.w = (clamp1(p[2]) + 1.f) * 0.5f;
#pragma unroll
    for (int k = 0; k < 8; ++k) q.wk[k] = ((k & 4) ? q.u : 1.f - q.u) * ((k & 2) ? q.v : 1.f - q.v) * ((k & 1) ? q.w : 1.f - q.w);
    return q;
}

// One feature: returns r = out - t and adds to the partial sums; dfk gets the eight dfeats values.
__device__ __forceinline__ float one(const Point &q, const float f[8], float t, float dfk[8], float &loss, float &du, float &dv, float &dw) {
    float o = 0.f;
#pragma unroll
    for (int k = 0; k < 8; ++k) o = fmaf(q.wk[k], f[k], o);
    const float r = o - t;
    loss = fmaf(0.5f * r, r, loss);
#pragma unroll
    for (int k = 0; k < 8; ++k) dfk[k] = q.wk[k] * r;
    const float u = q.u, v = q.v, w = q.w;
    const float a = (1.f - v) * (1.f - w), b = (1.f - v) * w, c = v * (1.f - w), d = v * w;
    du = fmaf(r, (a * f[4] + b * f[5] + c * f[6] + d * f[7]) - (a * f[0] + b * f[1] + c * f[2] + d * f[3]), du);
    dv = fmaf(r, (1.f - u) * ((1.f - w) * (f[2] - f[0]) + w * (f[3] - f[1])) + u * ((1.f - w) * (f[6] - f[4]) + w * (f[7] - f[5])), dv);
    dw = fmaf(r, (1.f - u) * ((1.f - v) * (f[1] - f[0]) + v * (f[3] - f[2])) + u * ((1.f - v) * (f[5] - f[4]) + v * (f[7] - f[6])), dw);
    return r;
}

__device__ __forceinline__ void finish(const float *p, float *dp, float *lossp, float loss, float du, float dv, float dw) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        loss += __shfl_xor_sync(0xffffffffu, loss, o);
        du += __shfl_xor_sync(0xffffffffu, du, o);
        dv += __shfl_xor_sync(0xffffffffu, dv, o);
        dw += __shfl_xor_sync(0xffffffffu, dw, o);
    }
    if ((threadIdx.x & 31) == 0) {
        *lossp = loss;
        dp[0] = 0.5f * inside(p[0]) * du;
        dp[1] = 0.5f * inside(p[1]) * dv;
        dp[2] = 0.5f * inside(p[2]) * dw;
    }
}

extern "C" __global__ void tri_train_fused(const float *__restrict__ feats, const float *__restrict__ points,
                                           const float *__restrict__ target, float *__restrict__ dfeats,
                                           float *__restrict__ dpoints, float *__restrict__ loss, int N, int F) {
    const long long n = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (n >= N) return;
    const Point q = load_point(points + n * 3);
    float l = 0.f, du = 0.f, dv = 0.f, dw = 0.f;
    const float *row = feats + n * 8 * F;
    float *drow = dfeats + n * 8 * F;
    for (int f = threadIdx.x & 31; f < F; f += 32) {
        float x[8], d[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) x[k] = row[k * (long long)F + f];
        one(q, x, target[n * F + f], d, l, du, dv, dw);
#pragma unroll
        for (int k = 0; k < 8; ++k) drow[k * (long long)F + f] = d[k];
    }
    finish(points + n * 3, dpoints + n * 3, loss + n, l, du, dv, dw);
}

extern "C" __global__ void tri_train_fused_float4(const float4 *__restrict__ feats, const float *__restrict__ points,
                                                  const float4 *__restrict__ target, float4 *__restrict__ dfeats,
                                                  float *__restrict__ dpoints, float *__restrict__ loss, int N, int F) {
    const long long n = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (n >= N) return;
    const int F4 = F >> 2;
    const Point q = load_point(points + n * 3);
    float l = 0.f, du = 0.f, dv = 0.f, dw = 0.f;
    const float4 *row = feats + n * 8 * F4;
    float4 *drow = dfeats + n * 8 * F4;
    for (int f = threadIdx.x & 31; f < F4; f += 32) {
        float4 x[8], d4[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) x[k] = __ldcs(row + k * F4 + f);
        const float4 t = __ldcs(target + n * F4 + f);
        float c[8], d[8];
#define LANE(C)                                                 \
    _Pragma("unroll") for (int k = 0; k < 8; ++k) c[k] = x[k].C; \
    one(q, c, t.C, d, l, du, dv, dw);                           \
    _Pragma("unroll") for (int k = 0; k < 8; ++k) d4[k].C = d[k];
        LANE(x)
        LANE(y)
        LANE(z)
        LANE(w)
#undef LANE
#pragma unroll
        for (int k = 0; k < 8; ++k) __stcs(drow + k * F4 + f, d4[k]);
    }
    finish(points + n * 3, dpoints + n * 3, loss + n, l, du, dv, dw);
}

// Backward step 2, four in one: each thread computes four consecutive outputs of dk and of the
// per-row dw, so every value it reads from shared memory feeds four products instead of one (for dk
// one g[x] meets w at four neighbouring taps; for dw one k[y] meets g at four neighbouring lags), and
// the rows are staged and the results stored as float4. The first three (dk) or last three (dw)
// terms of the triangle belong to only some of the four outputs and are done separately, so the main
// loops have no conditions.
// Launch: grid B*C, block T/4; then the reduce. Limits: T <= 1024, T % 4 == 0.
#define TMAX 1024
extern "C" __global__ void rwkv_bwd_v2(const float *__restrict__ w, const float *__restrict__ k,
                                       const float *__restrict__ g, float *__restrict__ dk,
                                       float *__restrict__ dwrow, int B, int C, int T) {
    __shared__ __align__(16) float sw[TMAX];
    __shared__ __align__(16) float sk[TMAX];
    __shared__ __align__(16) float sg[TMAX];
    const int row = blockIdx.x;
    const int tt = threadIdx.x;
    const int c = row % C;
    const int T4 = T >> 2;
    if (tt < T4) {
        ((float4 *)sw)[tt] = ((const float4 *)(w + c * T))[tt];
        ((float4 *)sk)[tt] = ((const float4 *)(k + row * T))[tt];
        ((float4 *)sg)[tt] = ((const float4 *)(g + row * T))[tt];
    }
    __syncthreads();
    if (tt >= T4) return;
    const int u0 = tt << 2;

    // dk[u0+e] = sum_{x >= u0+e} g[x] * w[(T-1) - x + u0 + e]
    float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
    for (int x = u0; x < u0 + 3; ++x) {  // the head: x < u0+e contributes nothing to output e
        const float gv = sg[x];
        const float *ww = sw + (T - 1) - x + u0;
        a0 += gv * ww[0];
        if (x >= u0 + 1) a1 += gv * ww[1];
        if (x >= u0 + 2) a2 += gv * ww[2];
    }
    for (int x = u0 + 3; x < T; ++x) {
        const float gv = sg[x];
        const float *ww = sw + (T - 1) - x + u0;
        a0 += gv * ww[0];
        a1 += gv * ww[1];
        a2 += gv * ww[2];
        a3 += gv * ww[3];
    }
    ((float4 *)(dk + row * T))[tt] = make_float4(a0, a1, a2, a3);

    // dwrow[j0+e] = sum_{y=0..j0+e} g[y + (T-1) - j0 - e] * k[y]
    const int j0 = u0;
    a0 = a1 = a2 = a3 = 0.f;
    for (int y = 0; y <= j0; ++y) {
        const float kv = sk[y];
        const float *gg = sg + y + (T - 1) - j0;
        a0 += gg[0] * kv;
        a1 += gg[-1] * kv;
        a2 += gg[-2] * kv;
        a3 += gg[-3] * kv;
    }
    for (int y = j0 + 1; y <= j0 + 3; ++y) {  // the tail: only outputs e >= y - j0
        const float kv = sk[y];
        const float *gg = sg + y + (T - 1) - j0;
        if (y <= j0 + 1) a1 += gg[-1] * kv;
        if (y <= j0 + 2) a2 += gg[-2] * kv;
        a3 += gg[-3] * kv;
    }
    ((float4 *)(dwrow + row * T))[tt] = make_float4(a0, a1, a2, a3);
}

// dw[i] = sum over the G partial slices part[p*n + i], in order: deterministic.
extern "C" __global__ void rwkv_bwd_reduce(const float *__restrict__ part, float *__restrict__ dw, int G, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.f;
    for (int p = 0; p < G; ++p) s += part[(long long)p * n + i];
    dw[i] = s;
}

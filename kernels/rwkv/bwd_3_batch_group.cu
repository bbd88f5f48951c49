// Backward step 3, batch grouping (the article's v3 backward, BB = 2): one block takes BB batch rows
// of the same channel. For dk, each w value read from shared memory now serves BB rows (w is shared
// across the batch); for dw, the BB rows' contributions are added in registers, so the block writes
// one partial dw per (b-group, c) instead of one per row: B/BB partial slices for the reduce instead
// of B. The article found BB = 2 best for its backward (only dk reuses w, so the gain is smaller than
// the forward's); the triangle split into head/main/tail is as in step 2.
// Launch: grid (B/BB)*C, block T/4; then the reduce over B/BB slices.
// Limits: T <= 1024, T % 4 == 0, B % BB == 0.
#define TMAX 1024
#define BB 2
extern "C" __global__ void rwkv_bwd_v3(const float *__restrict__ w, const float *__restrict__ k,
                                       const float *__restrict__ g, float *__restrict__ dk,
                                       float *__restrict__ dwpart, int B, int C, int T) {
    __shared__ __align__(16) float sw[TMAX];
    __shared__ __align__(16) float sk[BB][TMAX];
    __shared__ __align__(16) float sg[BB][TMAX];
    const int grp = blockIdx.x / C;  // rows b = grp*BB .. grp*BB + BB-1
    const int c = blockIdx.x % C;
    const int tt = threadIdx.x;
    const int T4 = T >> 2;
    if (tt < T4) {
        ((float4 *)sw)[tt] = ((const float4 *)(w + c * T))[tt];
#pragma unroll
        for (int r = 0; r < BB; ++r) {
            const int row = (grp * BB + r) * C + c;
            ((float4 *)sk[r])[tt] = ((const float4 *)(k + row * T))[tt];
            ((float4 *)sg[r])[tt] = ((const float4 *)(g + row * T))[tt];
        }
    }
    __syncthreads();
    if (tt >= T4) return;
    const int u0 = tt << 2;

    // dk: four taps of w loaded once, used for BB rows.
    float a[BB][4];
#pragma unroll
    for (int r = 0; r < BB; ++r) a[r][0] = a[r][1] = a[r][2] = a[r][3] = 0.f;
    for (int x = u0; x < u0 + 3; ++x) {
        const float *ww = sw + (T - 1) - x + u0;
        const float w0 = ww[0], w1 = ww[1], w2 = ww[2];
#pragma unroll
        for (int r = 0; r < BB; ++r) {
            const float gv = sg[r][x];
            a[r][0] += gv * w0;
            if (x >= u0 + 1) a[r][1] += gv * w1;
            if (x >= u0 + 2) a[r][2] += gv * w2;
        }
    }
    for (int x = u0 + 3; x < T; ++x) {
        const float *ww = sw + (T - 1) - x + u0;
        const float w0 = ww[0], w1 = ww[1], w2 = ww[2], w3 = ww[3];
#pragma unroll
        for (int r = 0; r < BB; ++r) {
            const float gv = sg[r][x];
            a[r][0] += gv * w0;
            a[r][1] += gv * w1;
            a[r][2] += gv * w2;
            a[r][3] += gv * w3;
        }
    }
#pragma unroll
    for (int r = 0; r < BB; ++r) {
        const int row = (grp * BB + r) * C + c;
        ((float4 *)(dk + row * T))[tt] = make_float4(a[r][0], a[r][1], a[r][2], a[r][3]);
    }

    // dw: the BB rows' lags summed into the same four accumulators.
    const int j0 = u0;
    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
#pragma unroll
    for (int r = 0; r < BB; ++r) {
        for (int y = 0; y <= j0; ++y) {
            const float kv = sk[r][y];
            const float *gg = sg[r] + y + (T - 1) - j0;
            d0 += gg[0] * kv;
            d1 += gg[-1] * kv;
            d2 += gg[-2] * kv;
            d3 += gg[-3] * kv;
        }
        for (int y = j0 + 1; y <= j0 + 3; ++y) {
            const float kv = sk[r][y];
            const float *gg = sg[r] + y + (T - 1) - j0;
            if (y <= j0 + 1) d1 += gg[-1] * kv;
            if (y <= j0 + 2) d2 += gg[-2] * kv;
            d3 += gg[-3] * kv;
        }
    }
    ((float4 *)(dwpart + (grp * C + c) * T))[tt] = make_float4(d0, d1, d2, d3);
}

// dw[i] = sum over the G partial slices part[p*n + i], in order: deterministic.
extern "C" __global__ void rwkv_bwd_reduce(const float *__restrict__ part, float *__restrict__ dw, int G, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.f;
    for (int p = 0; p < G; ++p) s += part[(long long)p * n + i];
    dw[i] = s;
}

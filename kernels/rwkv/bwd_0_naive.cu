// Backward step 0, naive: the same shape of work as forward v0, once for each gradient. With
// g = dL/dout, one block per (b, c) row and one thread per t compute
//   dk[b][c][t]     = sum_{x=t..T-1} g[b][c][x] * w[c][(T-1)-(x-t)]    (the forward on reversed time)
//   dwrow[b][c][t]  = sum_{x=s..T-1} g[b][c][x] * k[b][c][x-s],  s = (T-1)-t
// reading w, k and g straight from global memory. Like the original, dw is first computed per (b, c)
// row (dwrow, B partial slices of C*T) and then summed over b by rwkv_bwd_reduce, one thread per
// (c, j) adding the B partials in order, so the sum is the same on every run (no atomics).
// Thread t does T-t products for dk and t+1 for dw: T+1 in all, the same for every thread.
// Launch: grid B*C, block T; then the reduce. Limits: T <= 1024.
extern "C" __global__ void rwkv_bwd_v0(const float *__restrict__ w, const float *__restrict__ k,
                                       const float *__restrict__ g, float *__restrict__ dk,
                                       float *__restrict__ dwrow, int B, int C, int T) {
    const int row = blockIdx.x;  // row = b*C + c
    const int t = threadIdx.x;
    if (t >= T) return;
    const int c = row % C;
    const float *wr = w + c * T;
    const float *kr = k + row * T;
    const float *gr = g + row * T;
    float s = 0.f;
    for (int x = t; x < T; ++x) s += gr[x] * wr[(T - 1) - (x - t)];
    dk[row * T + t] = s;
    const int sh = (T - 1) - t;  // the lag of dw[c][t]
    s = 0.f;
    for (int x = sh; x < T; ++x) s += gr[x] * kr[x - sh];
    dwrow[row * T + t] = s;
}

// dw[i] = sum over the G partial slices part[p*n + i], in order: deterministic.
extern "C" __global__ void rwkv_bwd_reduce(const float *__restrict__ part, float *__restrict__ dw, int G, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.f;
    for (int p = 0; p < G; ++p) s += part[(long long)p * n + i];
    dw[i] = s;
}

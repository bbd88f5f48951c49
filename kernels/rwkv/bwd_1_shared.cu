// Backward step 1, shared memory: as step 0, but the block first stages its w, k and g rows in
// __shared__ arrays (one coalesced load per element), so the two inner loops read shared memory
// instead of issuing T global loads per thread. What changed: three staged rows and a
// __syncthreads(); the arithmetic is the same as step 0.
// Launch: grid B*C, block T; then the reduce. Limits: T <= 1024 (the static rows).
#define TMAX 1024
extern "C" __global__ void rwkv_bwd_v1(const float *__restrict__ w, const float *__restrict__ k,
                                       const float *__restrict__ g, float *__restrict__ dk,
                                       float *__restrict__ dwrow, int B, int C, int T) {
    __shared__ float sw[TMAX], sk[TMAX], sg[TMAX];
    const int row = blockIdx.x;
    const int t = threadIdx.x;
    const int c = row % C;
    if (t < T) {
        sw[t] = w[c * T + t];
        sk[t] = k[row * T + t];
        sg[t] = g[row * T + t];
    }
    __syncthreads();
    if (t >= T) return;
    float s = 0.f;
    for (int x = t; x < T; ++x) s += sg[x] * sw[(T - 1) - (x - t)];
    dk[row * T + t] = s;
    const int sh = (T - 1) - t;
    s = 0.f;
    for (int x = sh; x < T; ++x) s += sg[x] * sk[x - sh];
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

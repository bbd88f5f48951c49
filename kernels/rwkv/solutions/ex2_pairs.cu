// Solution of exercise 2: one thread per PAIR of outputs t and T-1-t, so every thread does T+1
// products, on shared-memory rows. Launched with grid B*C, block T/2 (T even, T <= 1024).
extern "C" __global__ void ex2_pairs(const float *__restrict__ w, const float *__restrict__ k,
                                     float *__restrict__ out, float eps, int B, int C, int T) {
    __shared__ float ws[1024], ks[1024];
    const int row = blockIdx.x, c = row % C;
    for (int i = threadIdx.x; i < T; i += blockDim.x) {
        ws[i] = w[c * T + i];
        ks[i] = k[row * T + i];
    }
    __syncthreads();
    const int t = threadIdx.x;
    if (t >= T / 2) return;
    for (int pass = 0; pass < 2; ++pass) {
        const int tt = pass == 0 ? t : T - 1 - t;
        float s = eps;
        for (int u = 0; u <= tt; ++u) s += ws[(T - 1) - tt + u] * ks[u];
        out[row * T + tt] = s;
    }
}

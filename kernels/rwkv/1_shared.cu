// Step 1, shared memory: the block first copies its w row and k row into __shared__ arrays (one
// coalesced load per thread each), waits at __syncthreads(), then reads only shared memory in the
// loop. Each global value is now read once per block instead of up to T times.
// What changed from v0: the two staging loads and the barrier; the loop is the same.
// Launch: grid B*C, block T. Limits: T <= 1024 (the static arrays and one thread per t).
#define TMAX 1024
extern "C" __global__ void rwkv_fwd_v1(const float *__restrict__ w, const float *__restrict__ k,
                                       float *__restrict__ out, float eps, int B, int C, int T) {
    __shared__ float ws[TMAX];
    __shared__ float ks[TMAX];
    const int row = blockIdx.x;
    const int t = threadIdx.x;
    const int c = row % C;
    if (t < T) {
        ws[t] = w[c * T + t];
        ks[t] = k[row * T + t];
    }
    __syncthreads();  // every thread must see the whole rows before anyone reads them
    if (t >= T) return;
    const float *wr = ws + (T - 1) - t;
    float s = eps;
    for (int u = 0; u <= t; ++u) s += wr[u] * ks[u];
    out[row * T + t] = s;
}

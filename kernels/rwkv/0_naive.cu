// Step 0, naive: one block per (b, c) row, one thread per output t. Thread t walks u = 0..t and reads
// w and k straight from global memory, so every product costs two loads and thread t does t+1 of
// them: the triangle of work is spread unevenly, and the same w and k values are fetched by many
// threads. This is the baseline every later step is compared with.
// Launch: grid B*C, block T. Limits: T <= 1024 (one thread per t).
extern "C" __global__ void rwkv_fwd_v0(const float *__restrict__ w, const float *__restrict__ k,
                                       float *__restrict__ out, float eps, int B, int C, int T) {
    const int row = blockIdx.x;  // row = b*C + c
    const int t = threadIdx.x;
    if (t >= T) return;
    const int c = row % C;
    // out[t] = eps + sum_{u<=t} w[c][(T-1)-(t-u)] * k[row][u]: w's index walks up with u.
    const float *wr = w + c * T + (T - 1) - t;
    const float *kr = k + row * T;
    float s = eps;
    for (int u = 0; u <= t; ++u) s += wr[u] * kr[u];
    out[row * T + t] = s;
}

// Step 2, four outputs per thread: thread q computes out[4q .. 4q+3]. Each k[u] read from shared
// memory now feeds four products (one per output), the staging loads move 16 bytes (float4), and the
// block has T/4 threads. The four outputs share the same u range up to u = 4q; the last three u's
// form a small triangle handled after the loop.
// What changed from v1: a float4 accumulator, k reuse, float4 loads and stores, the triangular tail.
// Launch: grid B*C, block T/4. Limits: T % 4 == 0 (float4 rows), T <= 1024.
#define TMAX 1024
extern "C" __global__ void rwkv_fwd_v2(const float *__restrict__ w, const float *__restrict__ k,
                                       float *__restrict__ out, float eps, int B, int C, int T) {
    __shared__ __align__(16) float ws[TMAX];
    __shared__ __align__(16) float ks[TMAX];
    const int row = blockIdx.x;
    const int q = threadIdx.x;
    const int T4 = T >> 2;
    const int c = row % C;
    if (q < T4) {
        reinterpret_cast<float4 *>(ws)[q] = reinterpret_cast<const float4 *>(w + c * T)[q];
        reinterpret_cast<float4 *>(ks)[q] = reinterpret_cast<const float4 *>(k + row * T)[q];
    }
    __syncthreads();
    if (q >= T4) return;
    const int t = q << 2;
    // Output t+i needs w[(T-1)-(t+i-u)] = wb[3-i+u] with wb = ws + T-4-t.
    const float *wb = ws + (T - 4) - t;
    float4 s = make_float4(eps, eps, eps, eps);
    for (int u = 0; u <= t; ++u) {
        const float x = ks[u];  // read once, used four times
        s.x += wb[u + 3] * x;
        s.y += wb[u + 2] * x;
        s.z += wb[u + 1] * x;
        s.w += wb[u + 0] * x;
    }
    // The tail: u = t+1..t+3 only reaches the outputs at or after it.
    // wb[t+3] is w[c][T-1], the weight of the output's own step (t-u = 0).
    s.y += wb[t + 3] * ks[t + 1];
    s.z += wb[t + 2] * ks[t + 1] + wb[t + 3] * ks[t + 2];
    s.w += wb[t + 1] * ks[t + 1] + wb[t + 2] * ks[t + 2] + wb[t + 3] * ks[t + 3];
    reinterpret_cast<float4 *>(out + row * T)[q] = s;
}

// Step 3, batch grouping: w does not depend on b, so one block now computes BF rows of the same
// channel (b = g*BF .. g*BF+BF-1). Each w value read from shared memory feeds 4 outputs in BF rows:
// 4*BF products per w load instead of 4, and w is staged once per BF rows. The thread keeps BF
// float4 accumulators in registers.
// What changed from v2: the block's rows, BF accumulators, BF k rows in shared memory.
// Launch: grid C * (B/BF), block T/4. Limits: T % 4 == 0, T <= 1024, B % BF == 0.
#ifndef BF
#define BF 8
#endif
#define TMAX 1024
extern "C" __global__ void rwkv_fwd_v3(const float *__restrict__ w, const float *__restrict__ k,
                                       float *__restrict__ out, float eps, int B, int C, int T) {
    __shared__ __align__(16) float ws[TMAX];
    __shared__ __align__(16) float ks[BF][TMAX];
    const int c = blockIdx.x % C;
    const int b0 = (blockIdx.x / C) * BF;
    const int q = threadIdx.x;
    const int T4 = T >> 2;
    if (q < T4) {
        reinterpret_cast<float4 *>(ws)[q] = reinterpret_cast<const float4 *>(w + c * T)[q];
#pragma unroll
        for (int j = 0; j < BF; ++j)
            reinterpret_cast<float4 *>(ks[j])[q] = reinterpret_cast<const float4 *>(k + ((b0 + j) * C + c) * T)[q];
    }
    __syncthreads();
    if (q >= T4) return;
    const int t = q << 2;
    const float *wb = ws + (T - 4) - t;  // output t+i uses wb[3-i+u]
    float4 s[BF];
#pragma unroll
    for (int j = 0; j < BF; ++j) s[j] = make_float4(eps, eps, eps, eps);
    for (int u = 0; u <= t; ++u) {
        const float w0 = wb[u], w1 = wb[u + 1], w2 = wb[u + 2], w3 = wb[u + 3];  // shared by BF rows
#pragma unroll
        for (int j = 0; j < BF; ++j) {
            const float x = ks[j][u];
            s[j].x += w3 * x;
            s[j].y += w2 * x;
            s[j].z += w1 * x;
            s[j].w += w0 * x;
        }
    }
#pragma unroll
    for (int j = 0; j < BF; ++j) {
        const float *kk = ks[j];
        s[j].y += wb[t + 3] * kk[t + 1];
        s[j].z += wb[t + 2] * kk[t + 1] + wb[t + 3] * kk[t + 2];
        s[j].w += wb[t + 1] * kk[t + 1] + wb[t + 2] * kk[t + 2] + wb[t + 3] * kk[t + 3];
        reinterpret_cast<float4 *>(out + ((b0 + j) * C + c) * T)[q] = s[j];
    }
}

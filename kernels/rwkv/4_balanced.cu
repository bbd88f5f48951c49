// Step 4, balanced triangles (the step the article announced and never wrote): in v3, thread q does
// about 4q iterations, so the warps holding late t's run up to T/4 iterations while the early ones
// idle, and a block holds its shared memory until its slowest warp ends. Here thread q computes two
// groups of four outputs, q and its mirror Q-1-q (Q = T/4 groups): 4q + (T-4q) = T iterations for
// every thread. Half as many threads per block, each with equal work, so warps finish together.
// What changed from v3: the group loop became a function called for q and for Q-1-q; block T/8.
// Launch: grid C * (B/BF), block T/8. Limits: T % 8 == 0, T <= 1024, B % BF == 0.
#ifndef BF
#define BF 8
#endif
#define TMAX 1024

__device__ __forceinline__ void group4(const float *ws, const float (*ks)[TMAX], float *__restrict__ out,
                                       float eps, int b0, int C, int T, int c, int q) {
    const int t = q << 2;
    const float *wb = ws + (T - 4) - t;
    float4 s[BF];
#pragma unroll
    for (int j = 0; j < BF; ++j) s[j] = make_float4(eps, eps, eps, eps);
    for (int u = 0; u <= t; ++u) {
        const float w0 = wb[u], w1 = wb[u + 1], w2 = wb[u + 2], w3 = wb[u + 3];
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

extern "C" __global__ void rwkv_fwd_v4(const float *__restrict__ w, const float *__restrict__ k,
                                       float *__restrict__ out, float eps, int B, int C, int T) {
    __shared__ __align__(16) float ws[TMAX];
    __shared__ __align__(16) float ks[BF][TMAX];
    const int c = blockIdx.x % C;
    const int b0 = (blockIdx.x / C) * BF;
    const int T4 = T >> 2;
    for (int q = threadIdx.x; q < T4; q += blockDim.x) {  // T/4 float4s staged by T/8 threads
        reinterpret_cast<float4 *>(ws)[q] = reinterpret_cast<const float4 *>(w + c * T)[q];
#pragma unroll
        for (int j = 0; j < BF; ++j)
            reinterpret_cast<float4 *>(ks[j])[q] = reinterpret_cast<const float4 *>(k + ((b0 + j) * C + c) * T)[q];
    }
    __syncthreads();
    const int q = threadIdx.x;
    if (q >= T4 / 2) return;
    group4(ws, ks, out, eps, b0, C, T, c, q);           // short: 4q+4 products per row
    group4(ws, ks, out, eps, b0, C, T, c, T4 - 1 - q);  // long: T-4q products per row
}

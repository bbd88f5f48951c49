// Step 5, the gradient of the features: dL/dfeats[n][k][f] = W_k(point n) * dL/dout[n][f], the
// forward's weights times the upstream gradient. It never reads feats.
//
// No atomics: in this op every point has its OWN eight corner rows (feats is (N, 8, F), gathered per
// point before the op), so each element of dfeats has exactly one writer. In a real grid (NeRF's
// voxel features) neighbouring points share corners and the scatter back into the grid needs atomic
// adds (or a sort by corner); here that scatter is the backward of the gather that built feats, which
// PyTorch's indexing does outside this op.
//
// tri_bw_feats_float4: step 3's launch (block (TX, TY) of 256, weights once per point in shared
// memory); each thread reads one float4 of the gradient and writes eight float4s, streamed (__stcs):
// the kernel writes 8x what it reads. Limits: F % 4 == 0, 16-byte aligned g and dfeats.
// tri_bw_feats_any: the flat mapping of step 2 (any F): thread i = n*F + f writes dfeats[n][k][f]
// for the eight k, each a coalesced row segment across the warp.
__device__ __forceinline__ float clamp1(float x) { return x < -1.f ? -1.f : (x > 1.f ? 1.f : x); }

__device__ __forceinline__ float corner_weight(const float *p, int k) {
    const float u = (clamp1(p[0]) + 1.f) * 0.5f, v = (clamp1(p[1]) + 1.f) * 0.5f, w = (clamp1(p[2]) + 1.f) * 0.5f;
    return ((k & 4) ? u : 1.f - u) * ((k & 2) ? v : 1.f - v) * ((k & 1) ? w : 1.f - w);
}

extern "C" __global__ void tri_bw_feats_float4(const float4 *__restrict__ g, const float *__restrict__ points,
                                               float4 *__restrict__ dfeats, int N, int F) {
    __shared__ float ws[32][8];
    const int F4 = F >> 2;
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const long long n0 = (long long)blockIdx.x * blockDim.y;
    if (tid < 8 * (int)blockDim.y) {
        const long long p = n0 + (tid >> 3);
        if (p < N) ws[tid >> 3][tid & 7] = corner_weight(points + p * 3, tid & 7);
    }
    __syncthreads();
    const long long n = n0 + threadIdx.y;
    if (n >= N) return;
    float wk[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) wk[k] = ws[threadIdx.y][k];
    float4 *row = dfeats + n * 8 * F4;
    for (int f = threadIdx.x; f < F4; f += blockDim.x) {
        const float4 gv = __ldcs(g + n * F4 + f);
#pragma unroll
        for (int k = 0; k < 8; ++k) __stcs(row + k * F4 + f, make_float4(wk[k] * gv.x, wk[k] * gv.y, wk[k] * gv.z, wk[k] * gv.w));
    }
}

extern "C" __global__ void tri_bw_feats_any(const float *__restrict__ g, const float *__restrict__ points,
                                            float *__restrict__ dfeats, int N, int F) {
    const long long total = (long long)N * F;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        const long long n = i / F, f = i - n * F;
        const float gv = g[i];
        float *x = dfeats + n * 8 * F + f;
#pragma unroll
        for (int k = 0; k < 8; ++k) x[k * (long long)F] = corner_weight(points + n * 3, k) * gv;
    }
}

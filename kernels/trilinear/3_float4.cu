// Step 3, vectorised: each thread moves 16 bytes per load (a float4 of four features), and the
// eight corner weights of a point are computed ONCE per point and shared through shared memory
// instead of by every thread of the point.
//
// Launch: block (TX, TY) = 256 threads, TX = threads along the F/4 float4s of a row (a power of two,
// 8..256), TY = 256/TX points per block; grid = ceil(N/TY). The first 8*TY threads compute weight k
// of point p (thread 8p+k) into ws[p][k]; after the barrier, thread (x, y) interpolates float4s
// x, x+TX, ... of point y: eight independent 16-byte loads in flight per thread, read once, so they
// are streamed past L1 and L2 (__ldcs) and the output is stored the same way (__stcs).
//
// Why faster than step 2: a quarter of the load instructions for the same bytes, and more bytes in
// flight per thread. Limits: F % 4 == 0 and feats, out 16-byte aligned (the host checks both
// before the launch and falls back to step 2), N <= 2^31 - 1.
__device__ __forceinline__ float clamp1(float x) { return x < -1.f ? -1.f : (x > 1.f ? 1.f : x); }

// weight of corner k = 4*iu + 2*iv + iw of point p
__device__ __forceinline__ float corner_weight(const float *p, int k) {
    const float u = (clamp1(p[0]) + 1.f) * 0.5f, v = (clamp1(p[1]) + 1.f) * 0.5f, w = (clamp1(p[2]) + 1.f) * 0.5f;
    return ((k & 4) ? u : 1.f - u) * ((k & 2) ? v : 1.f - v) * ((k & 1) ? w : 1.f - w);
}

extern "C" __global__ void tri_fw_float4(const float4 *__restrict__ feats, const float *__restrict__ points,
                                         float4 *__restrict__ out, int N, int F) {
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
    const float4 *row = feats + n * 8 * F4;
    for (int f = threadIdx.x; f < F4; f += blockDim.x) {
        float4 x[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) x[k] = __ldcs(row + k * F4 + f);
        float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            o.x = fmaf(wk[k], x[k].x, o.x);
            o.y = fmaf(wk[k], x[k].y, o.y);
            o.z = fmaf(wk[k], x[k].z, o.z);
            o.w = fmaf(wk[k], x[k].w, o.w);
        }
        __stcs(out + n * F4 + f, o);
    }
}

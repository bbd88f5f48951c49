// Solution of exercise 1: the block-per-row softmax of step 2 with its shared-memory trees
// replaced by warp shuffles: 5 shuffles inside each warp, one float per warp in shared memory, one
// barrier, and 5 more shuffles over the warps' values.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)  // NVRTC has no <math.h>: +infinity from its bits
#endif
#define THREADS 256
#define WARPS (THREADS / 32)

__device__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ float block_max(float v, float *sh) {
    v = warp_max(v);
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    v = warp_max(threadIdx.x % 32 < WARPS ? sh[threadIdx.x % 32] : -INFINITY);
    __syncthreads();
    return v;
}
__device__ float block_sum(float v, float *sh) {
    v = warp_sum(v);
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    v = warp_sum(threadIdx.x % 32 < WARPS ? sh[threadIdx.x % 32] : 0.f);
    __syncthreads();
    return v;
}

extern "C" __global__ void __launch_bounds__(THREADS) softmax_ex1(const float *__restrict__ x, float *__restrict__ y, int rows, int cols) {
    __shared__ float sh[WARPS];
    const float *xr = x + (long long)blockIdx.x * cols;
    float *yr = y + (long long)blockIdx.x * cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += THREADS) m = fmaxf(m, xr[j]);
    m = block_max(m, sh);
    float s = 0.f;
    for (int j = threadIdx.x; j < cols; j += THREADS) s += expf(xr[j] - m);
    s = block_sum(s, sh);
    const float inv = 1.f / s;
    for (int j = threadIdx.x; j < cols; j += THREADS) yr[j] = expf(xr[j] - m) * inv;
}

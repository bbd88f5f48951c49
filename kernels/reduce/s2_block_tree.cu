// Softmax step 2: one block per row, reductions through a shared-memory tree.
//
// What changed from step 1: 256 threads share a row. Thread t reads elements t, t+256, t+512...,
// so the lanes of a warp read 32 consecutive floats (one 128-byte line: coalesced). Each thread
// keeps a partial maximum (then a partial sum); the block combines the 256 partials in shared
// memory by halving: 128 threads combine pairs, then 64, ... 1, with a barrier between levels.
// Why it is faster: every SM is busy (4096 blocks), every load is a full line.
// What is still slow: the row is read three times (max, sum, write), the tree costs 8 barriers
// per reduction with most threads idle, and each thread moves 4 bytes per load instruction.
// Launch: grid rows, block 256 (a power of two: the tree halves it). Limits: any cols >= 1.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)  // NVRTC has no <math.h>: +infinity from its bits
#endif
#define THREADS 256

__device__ float block_max(float v, float *sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]);
        __syncthreads();
    }
    const float r = sh[0];
    __syncthreads();  // sh is reused by the next reduction
    return r;
}

__device__ float block_sum(float v, float *sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    const float r = sh[0];
    __syncthreads();
    return r;
}

extern "C" __global__ void __launch_bounds__(THREADS) softmax_block_tree(const float *__restrict__ x, float *__restrict__ y, int rows, int cols) {
    __shared__ float sh[THREADS];
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

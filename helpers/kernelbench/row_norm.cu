// KernelBench level 1 problems 38 and 39: each row of x (rows, cols) divided by a norm of the row:
// the mean of |x| (L1Norm, NORM 1) or the square root of the sum of x^2 (L2Norm, NORM 2).
//
// Lesson 04's block per row: the block's threads stride the row (consecutive threads, consecutive
// addresses), each with UNROLL loads in flight, then warp shuffles and one shared-memory step
// give every thread the row's sum. A second pass reads the row again and writes x / norm. Rows of
// 65535 floats are not 16-byte aligned after the first, so the loads are single floats; the
// second read comes from L2 when the row is still there (256 KB a row: partly, with a few blocks
// per SM). The sum is float32: each thread's terms in order, then the tree.
//
// Define: NORM (1 or 2). Launch: grid rows, block 512. Limits: cols >= 1, rows * cols < 2^63.
#ifndef NORM
#define NORM 2
#endif
#define THREADS 512
#define WARPS (THREADS / 32)
#define UNROLL 8

__device__ __forceinline__ float term(float v) {
#if NORM == 1
    return fabsf(v);
#else
    return v * v;
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS)
kb_row_norm(const float *__restrict__ x, float *__restrict__ y, int cols) {
    __shared__ float part[WARPS];
    const float *xr = x + (long long)blockIdx.x * cols;
    float *yr = y + (long long)blockIdx.x * cols;
    float acc = 0.f;
    for (int j0 = threadIdx.x; j0 < cols; j0 += THREADS * UNROLL) {
        float v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            const int j = j0 + u * THREADS;
            v[u] = j < cols ? xr[j] : 0.f;
        }
#pragma unroll
        for (int u = 0; u < UNROLL; u++) acc += term(v[u]);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = acc;
    __syncthreads();
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < WARPS; w++) sum += part[w];  // every thread, the same order: the same sum
#if NORM == 1
    const float norm = sum / (float)cols;
#else
    const float norm = sqrtf(sum);
#endif
    for (int j = threadIdx.x; j < cols; j += THREADS) __stcs(yr + j, xr[j] / norm);
}

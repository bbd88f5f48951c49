// KernelBench level 1 problems 38 and 39: each row of x (rows, cols) divided by a norm of the row:
// the mean of |x| (L1Norm, NORM 1) or the square root of the sum of x^2 (L2Norm, NORM 2).
//
// Lesson 04's block per row, made persistent: a row of 65535 floats (256 KB) is more than an SM's
// shared memory holds, so the row is read twice, and the second read must come from L2. The grid
// is a few blocks (the host sizes it: at most one per SM, and the rows in flight within three
// quarters of L2), each walking rows blockIdx.x, + gridDim.x, ...: a row is read from DRAM, summed,
// then read again while it still sits in L2 and written with streaming stores (__stcs), which
// do not push the rows out. Pass 1 keeps UNROLL loads in flight per thread (1024 threads x 16 x 4
// bytes = 64 KB an SM, Little's law for a few hundred ns of DRAM latency); warp shuffles and one
// shared-memory step give every thread the row's sum. Rows of 65535 floats are not 16-byte aligned
// after the first, so the loads are single floats (coalesced: consecutive threads, consecutive
// addresses). The sum is float32: each thread's terms in order, then the tree.
//
// Define: NORM (1 or 2). Launch: any grid (a row per block at a time), block 1024; cols >= 1.
#ifndef NORM
#define NORM 2
#endif
#define THREADS 1024
#define WARPS (THREADS / 32)
#define UNROLL 16

__device__ __forceinline__ float term(float v) {
#if NORM == 1
    return fabsf(v);
#else
    return v * v;
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS)
kb_row_norm(const float *__restrict__ x, float *__restrict__ y, int rows, int cols) {
    __shared__ float part[WARPS];
    for (int row = blockIdx.x; row < rows; row += gridDim.x) {
        const float *xr = x + (long long)row * cols;
        float *yr = y + (long long)row * cols;
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
        __syncthreads();                                  // part is rewritten by the next row
#if NORM == 1
        const float norm = sum / (float)cols;
#else
        const float norm = sqrtf(sum);
#endif
        for (int j0 = threadIdx.x; j0 < cols; j0 += THREADS * 4) {
            float v[4];
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int j = j0 + u * THREADS;
                v[u] = j < cols ? xr[j] : 0.f;
            }
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int j = j0 + u * THREADS;
                if (j < cols) __stcs(yr + j, v[u] / norm);
            }
        }
    }
}

// The matrix-vector product of KernelBench level 1 problem 4, y = A x for A (M x K) and x (K):
// lesson 03's kernels are tiles of a product whose output is a matrix; with one column, each
// element of A is used once and the product is a read of A, so it runs at the copy bandwidth or not
// at all (a tensor-core tile with N = 1 wastes 7/8 or more of its columns and still reads A once).
// So one block per row (blocks loop over the rows), 256 threads reading the row in float4 loads
// (lesson 02's vector loads: 16 bytes a thread, consecutive threads consecutive 16 bytes), each
// thread summing its products in float32, then a warp shuffle and a shared-memory reduction of the
// 256 partial sums. x (K floats) is read by every row and stays in L2.
// A row of A whose start is not 16-byte aligned (K not a multiple of 4) is read float by float.
// Launch: any 1D grid (rows looped over), block 256; A, x, y; M; K.
#define GEMV_THREADS 256

extern "C" __global__ void __launch_bounds__(GEMV_THREADS) kb_gemv(const float *__restrict__ a, const float *__restrict__ x,
                                                                   float *__restrict__ y, int m, long long k) {
    __shared__ float part[GEMV_THREADS / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int r = blockIdx.x; r < m; r += gridDim.x) {
        const float *row = a + (size_t)r * k;
        float s = 0.f;
        if ((k & 3) == 0) {
            const float4 *row4 = (const float4 *)row, *x4 = (const float4 *)x;
            for (long long i = threadIdx.x; i < k / 4; i += GEMV_THREADS) {
                const float4 v = __ldcs(row4 + i), w = __ldg(x4 + i);
                s = fmaf(v.x, w.x, s);
                s = fmaf(v.y, w.y, s);
                s = fmaf(v.z, w.z, s);
                s = fmaf(v.w, w.w, s);
            }
        } else {
            for (long long i = threadIdx.x; i < k; i += GEMV_THREADS) s = fmaf(__ldcs(row + i), __ldg(x + i), s);
        }
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) part[warp] = s;
        __syncthreads();
        if (warp == 0) {
            s = lane < GEMV_THREADS / 32 ? part[lane] : 0.f;
            for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
            if (lane == 0) y[r] = s;
        }
        __syncthreads(); // part is reused by the next row
    }
}

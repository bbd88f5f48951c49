// Step 5, 2D register blocking: each thread computes an 8 x 8 block of outputs.
//
// What changed from step 4: a block of 256 threads computes a 128 x 128 tile of C; each thread
// keeps TM x TN = 64 accumulators. For each k of the BK = 8 tile it loads 8 values of the A tile and
// 8 of the B tile into registers (an outer product) and does 64 multiply-adds with them.
//
// Why it is faster: 16 shared loads feed 64 FMAs (0.25 loads per FMA, from 1.125), and each block
// reads a 128-wide strip of A and B per tile: twice the reuse of global data of step 4.
//
// What is still slow (step 6 fixes it): the A tile is stored as As[row][k], so in the inner loop
// the two row groups of a warp read words 64 apart (8 rows x 8 k): the same bank, a 2-way bank
// conflict on every A load; and all global loads are 4 bytes wide.
//
// Launch: block 256; grid (N/128, M/128). Limits: M % 128 == 0, N % 128 == 0, K % 8 == 0.
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8

extern "C" __global__ void __launch_bounds__(256) mm_blocktile_2d(const float *__restrict__ A, const float *__restrict__ B,
                                                float *__restrict__ C, int M, int N, int K) {
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int tid = threadIdx.x;
    const int tcol = tid % (BN / TN), trow = tid / (BN / TN);  // 16 x 16 threads
    A += blockIdx.y * BM * K;
    B += blockIdx.x * BN;
    C += blockIdx.y * BM * N + blockIdx.x * BN;
    float acc[TM][TN] = {{0.0f}};
    float ra[TM], rb[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        // 1024 elements of each tile, 4 per thread, consecutive threads on consecutive addresses.
#pragma unroll
        for (int l = 0; l < 4; ++l) {
            const int i = tid + 256 * l;
            As[(i / BK) * BK + i % BK] = A[(i / BK) * K + i % BK];
            Bs[(i / BN) * BN + i % BN] = B[(i / BN) * N + i % BN];
        }
        __syncthreads();
        A += BK;
        B += BK * N;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; ++i) ra[i] = As[(trow * TM + i) * BK + k];
#pragma unroll
            for (int j = 0; j < TN; ++j) rb[j] = Bs[k * BN + tcol * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += ra[i] * rb[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) C[(trow * TM + i) * N + tcol * TN + j] = acc[i][j];
}

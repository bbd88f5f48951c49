// Step 4, 1D register blocking: each thread computes TM = 8 outputs of one column of C.
//
// What changed from step 3: a block computes a 64 x 64 tile of C with 512 threads; each thread
// keeps 8 accumulators in registers for the outputs (row0 .. row0+7, col). In the inner loop over
// the BK = 8 columns of the A tile it loads ONE value of the B tile into a register and reuses it
// for 8 multiply-adds with 8 values of the A tile.
//
// Why it is faster: step 3 did 2 shared loads per FMA; here it is (1 + 8) / 8 = 1.125 loads per FMA,
// and the 8 accumulators give the scheduler 8 independent FMAs. The block also loads a larger tile
// per __syncthreads, so more of the time is arithmetic.
//
// Launch: block 512; grid (N/64, M/64). Limits: M % 64 == 0, N % 64 == 0, K % 8 == 0 (the tiles
// have no edge handling; the lesson's plan refuses other shapes before any launch).
#define BM 64
#define BN 64
#define BK 8
#define TM 8

extern "C" __global__ void __launch_bounds__(512) mm_blocktile_1d(const float *__restrict__ A, const float *__restrict__ B,
                                                float *__restrict__ C, int M, int N, int K) {
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int tid = threadIdx.x;
    const int tcol = tid % BN, trow = tid / BN;  // 64 columns x 8 row groups of TM rows
    A += blockIdx.y * BM * K;
    B += blockIdx.x * BN;
    C += blockIdx.y * BM * N + blockIdx.x * BN;
    // Loading: 512 threads, one element of each 64x8 / 8x64 tile.
    const int a_r = tid / BK, a_c = tid % BK, b_r = tid / BN, b_c = tid % BN;
    float acc[TM] = {0.0f};
    for (int k0 = 0; k0 < K; k0 += BK) {
        As[a_r * BK + a_c] = A[a_r * K + a_c];
        Bs[b_r * BN + b_c] = B[b_r * N + b_c];
        __syncthreads();
        A += BK;
        B += BK * N;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float b = Bs[k * BN + tcol];
#pragma unroll
            for (int i = 0; i < TM; ++i) acc[i] += As[(trow * TM + i) * BK + k] * b;
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) C[(trow * TM + i) * N + tcol] = acc[i];
}

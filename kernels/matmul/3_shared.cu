// Step 3, shared-memory tiling; also the lesson's general fallback (it takes any M, N, K).
//
// What changed from step 2: the block (32 x 32 threads, one per output of a 32 x 32 tile of C)
// walks along K in tiles of 32: each thread loads one element of the A tile and one of the B tile
// into shared memory, the block waits, and every thread does 32 multiply-adds out of shared memory.
//
// Why it is faster: each element of A and B is loaded from global memory once per tile instead of
// once per output: 32x fewer global loads. The inner loop still does 2 shared loads per FMA (As is
// read as a broadcast, Bs by consecutive words: no bank conflicts), so shared-memory bandwidth is
// the next limit.
//
// Launch: block (32, 32); grid (ceil(N/32), ceil(M/32)). Limits: none on the shape: tiles that
// hang over an edge load zeros and the stores are bounds-checked.
#define TS 32

extern "C" __global__ void mm_shared(const float *__restrict__ A, const float *__restrict__ B,
                                     float *__restrict__ C, int M, int N, int K) {
    __shared__ float As[TS][TS];
    __shared__ float Bs[TS][TS];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TS + ty, col = blockIdx.x * TS + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TS) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TS; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

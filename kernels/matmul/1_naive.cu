// Step 1, naive: one thread per output element C[row][col], the dot product of row `row` of A and
// column `col` of B read straight from global memory.
//
// The mistake this step keeps on purpose: threadIdx.x runs along the ROWS of C. The 32 threads of a
// warp then read 32 different rows of A (addresses K floats apart: 32 separate memory transactions
// for every k) and write 32 different rows of C; only their B loads (all the same address) coalesce.
//
// Launch: block (16, 16); grid (ceil(M/16), ceil(N/16)). Limits: none on the shape (every index is
// bounds-checked), each matrix under 2^31 elements (int indexing).
extern "C" __global__ void mm_naive(const float *__restrict__ A, const float *__restrict__ B,
                                    float *__restrict__ C, int M, int N, int K) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    const int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}

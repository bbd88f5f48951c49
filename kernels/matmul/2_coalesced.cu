// Step 2, coalesced: the same one-thread-per-output kernel with threadIdx.x running along the
// COLUMNS of C. What changed from step 1: the two index lines swapped. Now the 32 threads of a warp
// read 32 consecutive floats of one row of B (one 128-byte transaction), all read the same element
// of A (a broadcast), and write 32 consecutive floats of C.
//
// Why it is faster: each warp's B loads and C stores become one transaction instead of 32. The
// kernel still reads every A and B element from global memory (or L1/L2) N and M times: about
// 2 loads per multiply-add, so it is limited by the load path, far from the FMA peak.
//
// Launch: block (32, 8); grid (ceil(N/32), ceil(M/8)). Limits: none on the shape.
extern "C" __global__ void mm_coalesced(const float *__restrict__ A, const float *__restrict__ B,
                                        float *__restrict__ C, int M, int N, int K) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}

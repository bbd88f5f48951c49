// Step 7c, thin K: a product less than 8 deep (K = 1..7), what Multiply runs where the output is
// nearly all the work. 4097 x 4097 x 1 reads 33 KB and writes 67 MB: its speed is the speed of
// writing C, and tiles of 16 k (7b) would be mostly zeros.
//
// What changed from step 2 (a thread per output, which Multiply ran on these shapes before):
// 1. A thread owns one column of C and keeps that column's K values of B in registers, loaded once;
//    then it walks down its rows, each output K multiply-adds out of registers. The K values of a
//    row of A are the same for the 32 lanes of a warp (one broadcast load each), so a warp reads
//    K floats of A and writes 32 consecutive floats of C: a coalesced store of a row segment.
// 2. The grid is a few blocks per SM that loop over the rows, instead of one thread per output:
//    no block start-up per 256 outputs, and 4 rows per iteration, whose A loads issue together
//    before their 4 stores.
// 3. K is a template parameter (a switch picks 1..7), so every loop over k unrolls and b[] stays in
//    registers.
// 4. The stores are streaming (__stcs, evict-first): C is written once and not read back, so it
//    should not push A and B out of the caches.
//
// Why it is faster: step 2 launches a thread per output (16.8 million at 4097 x 4097) that reloads
// its column of B and row of A; here each thread writes many outputs (at 4097 x 4097 on an H100,
// 129 x 4 blocks: 128 rows a thread), B is read once per thread, and what is left is the write of
// C. Rows of C are not 16-byte aligned when N % 4 != 0, so the stores are single floats; a warp's
// 32 consecutive floats still fill whole 32-byte sectors (but at its two ends), which the L2 merges
// with the neighbouring warp's.
//
// Launch: block (32, 8); grid (ceil(N/32), G), G blocks down the rows (the plan picks G for about 4
// blocks per SM in one wave), rows walked with a stride of 8G. Limits: 1 <= K <= 7 (K >= 8 writes
// nothing: the plan refuses it); any M, N; runs on every GPU (no cp.async, no tensor cores).
#define THIN_UNROLL 4  // rows per iteration of a thread

// thin_rows computes column col of C for the rows r0, r0 + stride, ...: KK multiply-adds each, out
// of B's column held in registers and A's row read by every lane of the warp at once.
template <int KK>
__device__ __forceinline__ void thin_rows(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                                          long long M, int N, int col, long long r0, long long stride) {
    float b[KK];
#pragma unroll
    for (int k = 0; k < KK; ++k) b[k] = __ldg(B + (size_t)k * N + col);
    long long r = r0;
    for (; r + (THIN_UNROLL - 1) * stride < M; r += THIN_UNROLL * stride) {
        float c[THIN_UNROLL];
#pragma unroll
        for (int u = 0; u < THIN_UNROLL; ++u) {
            const float *a = A + (size_t)(r + u * stride) * KK;
            float acc = 0.0f;
#pragma unroll
            for (int k = 0; k < KK; ++k) acc += __ldg(a + k) * b[k];
            c[u] = acc;
        }
#pragma unroll
        for (int u = 0; u < THIN_UNROLL; ++u) __stcs(C + (size_t)(r + u * stride) * N + col, c[u]);
    }
    for (; r < M; r += stride) {
        const float *a = A + (size_t)r * KK;
        float acc = 0.0f;
#pragma unroll
        for (int k = 0; k < KK; ++k) acc += __ldg(a + k) * b[k];
        __stcs(C + (size_t)r * N + col, acc);
    }
}

extern "C" __global__ void __launch_bounds__(256, 4) mm_thin_k(const float *__restrict__ A, const float *__restrict__ B,
                                                               float *__restrict__ C, int M, int N, int K) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= N) return;
    const long long r0 = (long long)blockIdx.y * blockDim.y + threadIdx.y;
    const long long stride = (long long)gridDim.y * blockDim.y;
    switch (K) {
    case 1: thin_rows<1>(A, B, C, M, N, col, r0, stride); break;
    case 2: thin_rows<2>(A, B, C, M, N, col, r0, stride); break;
    case 3: thin_rows<3>(A, B, C, M, N, col, r0, stride); break;
    case 4: thin_rows<4>(A, B, C, M, N, col, r0, stride); break;
    case 5: thin_rows<5>(A, B, C, M, N, col, r0, stride); break;
    case 6: thin_rows<6>(A, B, C, M, N, col, r0, stride); break;
    case 7: thin_rows<7>(A, B, C, M, N, col, r0, stride); break;
    default: break;  // K >= 8: refused by the plan (Multiply runs 7b); C is left as it was
    }
}

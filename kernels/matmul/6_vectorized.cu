// Step 6, vectorised loads and a transposed A tile.
//
// What changed from step 5 (same 128 x 128 tile, 256 threads, 8 x 8 outputs per thread):
// 1. Global loads are float4: one 16-byte load per thread for each tile instead of four 4-byte ones.
// 2. The A tile is stored TRANSPOSED, As[k][m]: a thread's 8 rows for one k are now 8 consecutive
//    words, read as two float4 (step 5 read 8 scattered words, and the warp's two row groups hit the
//    same bank: a 2-way conflict on every A load). The B tile is read as two float4 too.
// 3. The transposed tile's rows are padded by PAD words (4 by default). Without it, the float4 of A
//    that a thread loads from global memory is stored as four words 128 words apart, and the two
//    threads of a warp that share a row of A write the same bank: a 2-way conflict on every store.
//    With BM + 4 words per row the second thread lands 16 banks away. (-DPAD=0 builds the unpadded
//    version; the lesson times both and counts the conflicts of each access pattern.)
//
// Why it is faster: fewer, wider load instructions (a quarter of the global loads, a quarter of the
// shared loads in the inner loop) and no bank conflicts; the FMA:load ratio is unchanged.
//
// Launch: block 256; grid (N/128, M/128). Limits: M % 128 == 0, N % 128 == 0, K % 8 == 0, and A,
// B, C 16-byte aligned (float4 accesses).
#ifndef PAD
#define PAD 4
#endif
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define SA (BM + PAD)

extern "C" __global__ void __launch_bounds__(256) mm_vectorized(const float *__restrict__ A, const float *__restrict__ B,
                                              float *__restrict__ C, int M, int N, int K) {
    __shared__ __align__(16) float As[BK * SA];
    __shared__ __align__(16) float Bs[BK * BN];
    const int tid = threadIdx.x;
    const int tcol = tid % (BN / TN), trow = tid / (BN / TN);
    A += blockIdx.y * BM * K;
    B += blockIdx.x * BN;
    C += blockIdx.y * BM * N + blockIdx.x * BN;
    // A tile 128 x 8: 256 float4, one per thread (row tid/2, columns 4*(tid%2) ..+3).
    const int a_r = tid / 2, a_c = 4 * (tid % 2);
    // B tile 8 x 128: 256 float4, one per thread (row tid/32, columns 4*(tid%32) ..+3).
    const int b_r = tid / 32, b_c = 4 * (tid % 32);
    float acc[TM][TN] = {{0.0f}};
    float ra[TM], rb[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        const float4 a = *reinterpret_cast<const float4 *>(A + a_r * K + a_c);
        As[(a_c + 0) * SA + a_r] = a.x;
        As[(a_c + 1) * SA + a_r] = a.y;
        As[(a_c + 2) * SA + a_r] = a.z;
        As[(a_c + 3) * SA + a_r] = a.w;
        *reinterpret_cast<float4 *>(Bs + b_r * BN + b_c) = *reinterpret_cast<const float4 *>(B + b_r * N + b_c);
        __syncthreads();
        A += BK;
        B += BK * N;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float4 a0 = *reinterpret_cast<const float4 *>(As + k * SA + trow * TM);
            const float4 a1 = *reinterpret_cast<const float4 *>(As + k * SA + trow * TM + 4);
            const float4 b0 = *reinterpret_cast<const float4 *>(Bs + k * BN + tcol * TN);
            const float4 b1 = *reinterpret_cast<const float4 *>(Bs + k * BN + tcol * TN + 4);
            ra[0] = a0.x; ra[1] = a0.y; ra[2] = a0.z; ra[3] = a0.w;
            ra[4] = a1.x; ra[5] = a1.y; ra[6] = a1.z; ra[7] = a1.w;
            rb[0] = b0.x; rb[1] = b0.y; rb[2] = b0.z; rb[3] = b0.w;
            rb[4] = b1.x; rb[5] = b1.y; rb[6] = b1.z; rb[7] = b1.w;
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += ra[i] * rb[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        float *c = C + (trow * TM + i) * N + tcol * TN;
        *reinterpret_cast<float4 *>(c) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *reinterpret_cast<float4 *>(c + 4) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}

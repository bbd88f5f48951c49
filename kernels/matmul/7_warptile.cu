// Step 7, warp tiling and double buffering with cp.async: the lesson's best CUDA-core float32 kernel.
//
// What changed from step 6:
// 1. Warp tiling. The 128 x 128 block tile is cut into 8 warp tiles of 64 x 32 (2 along M, 4 along
//    N); a warp's lanes form an 8 x 4 grid and lane (lm, ln) owns rows lm + 8i (i = 0..7) and the
//    columns 4ln..4ln+3 and 16+4ln..16+4ln+3 of its warp tile: 8 x 8 outputs. A warp's A loads then
//    touch 8 consecutive rows (8 distinct float4, conflict-free with the row stride below) and its B
//    loads 4 consecutive float4 (one 64-byte wavefront); every other lane gets a broadcast.
// 2. The A tile is no longer transposed: it is copied as it is, As[m][k], with a row stride of
//    BK + 4 = 20 words (8 consecutive rows start 20 words apart: 0, 20, 8, 28, 16, 4, 24, 12 mod 32,
//    eight distinct groups of 4 banks). The inner loop reads 4 consecutive k of a row as one float4
//    and does 4 x 64 FMAs per 8 + 8 float4 loads.
// 3. Double buffering with cp.async: the copy of tile t+1 from global to shared memory (16 bytes a
//    thread at a time, bypassing registers and L1) is issued before the arithmetic on tile t, so the
//    load latency hides behind 4096 FMAs per thread. Two stages: 36 KiB of static shared memory.
//
// Why it is faster: loads of the next tile overlap the math of this one, BK = 16 halves the
// barriers per FMA, and every shared access is conflict-free. What limits it: 168 registers a
// thread leave room for one block of 8 warps per SM; -DMIN_BLOCKS=2 caps registers at 128 for two
// blocks, and measured no faster on the H100 (the lesson's tuning test, MATMUL_TUNE=1).
//
// Launch: block 256; grid (N/128, M/128). Limits: M % 128 == 0, N % 128 == 0, K % 16 == 0, A, B, C
// 16-byte aligned (cp.async and float4), compute capability 8.0+ (cp.async).
// Needs: compute capability 8.0 (cp.async).
#define BM 128
#define BN 128
#define BK 16
#define SA (BK + 4)
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1  // blocks per SM asked of the compiler: 2 caps registers at 128 a thread
#endif

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void cp_async16(void *dst, const void *src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(dst)), "l"(src) : "memory");
}

__device__ __forceinline__ float comp(const float4 &v, int c) { return c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w; }

extern "C" __global__ void __launch_bounds__(256, MIN_BLOCKS) mm_warptile(const float *__restrict__ A, const float *__restrict__ B,
                                            float *__restrict__ C, int M, int N, int K) {
    __shared__ __align__(16) float As[2][BM * SA];
    __shared__ __align__(16) float Bs[2][BK * BN];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;  // warp tile origin in the block tile
    const int lm = lane & 7, ln = lane >> 3;
    const float *Ab = A + (size_t)blockIdx.y * BM * K;
    const float *Bb = B + (size_t)blockIdx.x * BN;

    auto load = [&](int stage, int k0) {
#pragma unroll
        for (int l = 0; l < 2; ++l) {  // A: 128 rows x 4 float4
            const int i = tid + 256 * l, r = i >> 2, c = (i & 3) * 4;
            cp_async16(&As[stage][r * SA + c], Ab + (size_t)r * K + k0 + c);
        }
#pragma unroll
        for (int l = 0; l < 2; ++l) {  // B: 16 rows x 32 float4
            const int i = tid + 256 * l, r = i >> 5, c = (i & 31) * 4;
            cp_async16(&Bs[stage][r * BN + c], Bb + (size_t)(k0 + r) * N + c);
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    };

    float acc[8][8] = {{0.0f}};
    const int tiles = K / BK;
    load(0, 0);
    for (int t = 0; t < tiles; ++t) {
        const int s = t & 1;
        if (t + 1 < tiles) {
            load(s ^ 1, (t + 1) * BK);
            asm volatile("cp.async.wait_group 1;" ::: "memory");
        } else {
            asm volatile("cp.async.wait_group 0;" ::: "memory");
        }
        __syncthreads();
        const float *as = As[s], *bs = Bs[s];
#pragma unroll
        for (int kc = 0; kc < BK; kc += 4) {
            float4 a[8];
#pragma unroll
            for (int i = 0; i < 8; ++i) a[i] = *reinterpret_cast<const float4 *>(as + (wm + lm + 8 * i) * SA + kc);
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                const float4 b0 = *reinterpret_cast<const float4 *>(bs + (kc + kk) * BN + wn + 4 * ln);
                const float4 b1 = *reinterpret_cast<const float4 *>(bs + (kc + kk) * BN + wn + 16 + 4 * ln);
#pragma unroll
                for (int i = 0; i < 8; ++i) {
                    const float av = comp(a[i], kk);
                    acc[i][0] += av * b0.x;
                    acc[i][1] += av * b0.y;
                    acc[i][2] += av * b0.z;
                    acc[i][3] += av * b0.w;
                    acc[i][4] += av * b1.x;
                    acc[i][5] += av * b1.y;
                    acc[i][6] += av * b1.z;
                    acc[i][7] += av * b1.w;
                }
            }
        }
        __syncthreads();  // the next iteration's copy overwrites the stage read here
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        float *c = C + (size_t)(blockIdx.y * BM + wm + lm + 8 * i) * N + blockIdx.x * BN + wn + 4 * ln;
        *reinterpret_cast<float4 *>(c) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *reinterpret_cast<float4 *>(c + 16) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}

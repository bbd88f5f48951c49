// Step 7, warp tiling and a 3-stage cp.async pipeline: the lesson's best CUDA-core float32 kernel.
//
// What changed from step 6:
// 1. Warp tiling. The 128 x 128 block tile is cut into 8 warp tiles of 64 x 32 (2 along M, 4 along
//    N); a warp's lanes form an 8 x 4 grid and lane (lm, ln) owns rows lm + 8i (i = 0..7) and the
//    columns 4ln..4ln+3 and 16+4ln..16+4ln+3 of its warp tile: 8 x 8 outputs. A warp's A loads then
//    touch 8 consecutive rows (8 distinct float4, conflict-free with the row stride below) and its B
//    loads 4 consecutive float4 (one 64-byte wavefront); every other lane gets a broadcast.
// 2. The A tile is no longer transposed: it is copied as it is, As[m][k], with a row stride of
//    BK + 4 = 36 words (8 consecutive rows start 36 words apart: 0, 4, 8, .., 28 mod 32, eight
//    distinct groups of 4 banks). The inner loop reads 4 consecutive k of a row as one float4 and
//    does 4 x 64 FMAs per 8 + 8 float4 loads.
// 3. k tiles 32 deep (BK = 32, step 6's were 8): a thread does 2048 FMAs per k tile, so the
//    barriers and cp.async waits, one of each per k tile, come half as often per FMA as with 16.
// 4. A 3-stage cp.async pipeline: the copies of tiles t+1 and t+2 from global to shared memory (16
//    bytes a thread at a time, bypassing registers and L1) are in flight while tile t is computed,
//    so a load has two tiles' arithmetic to land in. One __syncthreads per k tile: wait for tile t
//    (cp.async.wait_group STAGES - 2), barrier, then refill the stage tile t - 1 used. 3 stages of
//    (128 x 36 + 32 x 128) floats are 102 KiB of dynamic shared memory, which the launch opts in to.
//    Where a block cannot have that much (99 KiB on compute capability 8.6 and 8.9: A10, L4, RTX
//    3090 and 4090), the lesson builds it with -DSTAGES=2 (68 KiB), the double-buffered loop below.
//
// Why it is faster: on the H100 (CUDA 13.0) this build took 3.34 ms at 4096^3, 83% of cuBLAS fp32's
// speed in the same run, against 3.63 ms (76%) for 2 stages of BK = 16 (36 KiB, the step's first
// form): half the barriers and waits per FMA, and two tiles in flight instead of one. Every shared
// access is conflict-free. What limits it: 167 registers a thread and 102 KiB of shared memory leave
// room for one block of 8 warps per SM.
//
// Tuning builds (the lesson's tuning test, MATMUL_TUNE=1, times them; measured on the H100, same run):
//   -DSTAGES=2, 4   pipeline depth (2: 3.40 ms with BK = 32; 4: 3.35 ms, no better than 3).
//   -DBK=16         k tiles 16 deep, A rows 20 words apart (still conflict-free): 3.53 ms with 3
//                   stages, 3.63 ms with 2 (36 KiB, static shared memory).
//   -DMIN_BLOCKS=2  caps registers at 128 for two blocks per SM (2 stages of BK = 16: 3.53 ms against
//                   3.63; two blocks of this build's 102 KiB fit in the H100's 228 KiB per SM).
//   -DSWIZZLE=g     blocks launched in order walk g block rows at a time (down a column of g tiles,
//                   then the next column), so the blocks resident together share rows of A and
//                   columns of B in the L2. Default: row by row; 4 and 8 were never faster.
// A build whose stages are over 48 KiB of shared memory (STAGES x (128 x (BK + 4) + BK x 128)
// floats: any build of BK = 32, 3 or more stages of BK = 16) takes it as dynamic shared memory; 2
// stages of BK = 16 (36 KiB) stay static.
//
// Launch: block 256; grid (N/128, M/128); dynamic shared memory as above. Limits: M % 128 == 0,
// N % 128 == 0, K % BK == 0 (32 by default), A, B, C 16-byte aligned (cp.async and float4),
// compute capability 8.0+ (cp.async), STAGES x 34 KiB of shared memory per block (BK = 32).
// Needs: compute capability 8.0 (cp.async).
#define BM 128
#define BN 128
#ifndef BK
#define BK 32  // k depth of a tile: 32 or 16
#endif
#ifndef STAGES
#define STAGES 3  // cp.async pipeline depth: 3, 2 or 4
#endif
#define SA (BK + 4)
#define STAGE_FLOATS (BM * SA + BK * BN)
#if STAGES * STAGE_FLOATS * 4 > 48 * 1024
#define DYNAMIC_SMEM 1
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1  // blocks per SM asked of the compiler: 2 caps registers at 128 a thread
#endif
static_assert(STAGES >= 2 && (BK == 16 || BK == 32), "7: STAGES >= 2, BK 16 or 32");

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void cp_async16(void *dst, const void *src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(dst)), "l"(src) : "memory");
}

__device__ __forceinline__ float comp(const float4 &v, int c) { return c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w; }

// warp_tile_step does one k tile's products for the thread's 8 x 8 outputs: as and bs are the
// stage's A tile (BM rows of SA words) and B tile (BK rows of BN), the warp tile at (wm, wn).
__device__ __forceinline__ void warp_tile_step(float (&acc)[8][8], const float *as, const float *bs, int wm, int wn, int lm,
                                               int ln) {
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
}

extern "C" __global__ void __launch_bounds__(256, MIN_BLOCKS) mm_warptile(const float *__restrict__ A, const float *__restrict__ B,
                                                                          float *__restrict__ C, int M, int N, int K) {
#ifdef DYNAMIC_SMEM
    extern __shared__ __align__(16) float smem[];  // the A stages, then the B stages
    float(*As)[BM * SA] = reinterpret_cast<float(*)[BM * SA]>(smem);
    float(*Bs)[BK * BN] = reinterpret_cast<float(*)[BK * BN]>(smem + STAGES * BM * SA);
#else
    __shared__ __align__(16) float As[STAGES][BM * SA];
    __shared__ __align__(16) float Bs[STAGES][BK * BN];
#endif
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;  // warp tile origin in the block tile
    const int lm = lane & 7, ln = lane >> 3;
#if defined(SWIZZLE) && SWIZZLE > 1
    // Groups of SWIZZLE block rows; within a group, consecutive blocks go down a column.
    const int bid = blockIdx.y * gridDim.x + blockIdx.x, per = SWIZZLE * gridDim.x;
    const int first = bid / per * SWIZZLE, rows = min(SWIZZLE, (int)gridDim.y - first), local = bid % per;
    const unsigned by = first + local % rows, bx = local / rows;
#else
    const unsigned by = blockIdx.y, bx = blockIdx.x;
#endif
    const float *Ab = A + (size_t)by * BM * K;
    const float *Bb = B + (size_t)bx * BN;

    auto load = [&](int stage, int k0) {
#pragma unroll
        for (int l = 0; l < BM * BK / 4 / 256; ++l) {  // A: 128 rows x BK / 4 float4
            const int i = tid + 256 * l, r = i >> (BK == 32 ? 3 : 2), c = (i & (BK / 4 - 1)) * 4;
            cp_async16(&As[stage][r * SA + c], Ab + (size_t)r * K + k0 + c);
        }
#pragma unroll
        for (int l = 0; l < BK * BN / 4 / 256; ++l) {  // B: BK rows x 32 float4
            const int i = tid + 256 * l, r = i >> 5, c = (i & 31) * 4;
            cp_async16(&Bs[stage][r * BN + c], Bb + (size_t)(k0 + r) * N + c);
        }
    };
    auto commit = [] { asm volatile("cp.async.commit_group;" ::: "memory"); };

    float acc[8][8] = {{0.0f}};
    const int tiles = K / BK;
#if STAGES == 2
    load(0, 0);
    commit();
    for (int t = 0; t < tiles; ++t) {
        const int s = t & 1;
        if (t + 1 < tiles) {
            load(s ^ 1, (t + 1) * BK);
            commit();
            asm volatile("cp.async.wait_group 1;" ::: "memory");
        } else {
            asm volatile("cp.async.wait_group 0;" ::: "memory");
        }
        __syncthreads();
        warp_tile_step(acc, As[s], Bs[s], wm, wn, lm, ln);
        __syncthreads();  // the next iteration's copy overwrites the stage read here
    }
#else
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {  // tiles 0 .. STAGES - 2 in flight; an empty group past the end
        if (s < tiles) load(s, s * BK);
        commit();
    }
    int rs = 0, ws = STAGES - 1;  // the stage read this iteration, the stage refilled
    for (int t = 0; t < tiles; ++t) {
        asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2) : "memory");  // tile t has landed (this thread's part)
        __syncthreads();  // every thread's part of tile t is visible, and every thread is done with tile t - 1
        if (t + STAGES - 1 < tiles) load(ws, (t + STAGES - 1) * BK);  // into the stage tile t - 1 used
        commit();  // an empty group at the end keeps the count that wait_group relies on
        warp_tile_step(acc, As[rs], Bs[rs], wm, wn, lm, ln);
        rs = rs + 1 == STAGES ? 0 : rs + 1;
        ws = ws + 1 == STAGES ? 0 : ws + 1;
    }
#endif
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        float *c = C + (size_t)(by * BM + wm + lm + 8 * i) * N + bx * BN + wn + 4 * ln;
        *reinterpret_cast<float4 *>(c) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *reinterpret_cast<float4 *>(c + 16) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}

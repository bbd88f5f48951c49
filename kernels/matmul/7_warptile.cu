// Step 7, warp tiling and a 3-stage cp.async pipeline: the lesson's best CUDA-core float32 kernel.
//
// What changed from step 6:
// 1. Warp tiling. The 128 x 128 block tile is cut into 8 warp tiles of 64 x 32 (2 along M, 4 along
//    N); a warp's lanes form an 8 x 4 grid and lane (lm, ln) owns rows lm + 8i (i = 0..7) and the
//    columns 4ln..4ln+3 and 16+4ln..16+4ln+3 of its warp tile: 8 x 8 outputs. A warp's A loads then
//    touch 8 consecutive rows (8 distinct float4) and its B loads 4 consecutive float4 (one 64-byte
//    wavefront); every other lane gets a broadcast.
// 2. The A tile is no longer transposed: it is copied as it is, 128 rows of BK = 32 floats, and the
//    inner loop reads 4 consecutive k of a row as one float4 (4 x 64 FMAs per 8 + 8 float4 loads).
//    A row of 32 floats spans all 32 banks, so the 8 rows a warp reads at once would all start in
//    bank 0 (an 8-way conflict). Instead of padding each row (the layout before, -DPADDED: rows of
//    36 words), the 16-byte chunk c of row r is stored at chunk c XOR (r mod 8): an XOR swizzle, the
//    layout TMA's 128-byte swizzle makes in the Hopper lesson. The 8 rows' chunks land in 8
//    different groups of 4 banks, and a stage is 32 KiB instead of 34.
// 3. k tiles 32 deep (BK = 32, step 6's were 8): a thread does 2048 FMAs per k tile, so the
//    barriers and cp.async waits, one of each per k tile, come half as often per FMA as with 16.
// 4. A 3-stage cp.async pipeline: the copies of tiles t+1 and t+2 from global to shared memory (16
//    bytes a thread at a time, bypassing registers and L1) are in flight while tile t is computed,
//    so a load has two tiles' arithmetic to land in. One __syncthreads per k tile: wait for tile t
//    (cp.async.wait_group STAGES - 2), barrier, then refill the stage tile t - 1 used. 3 stages are
//    96 KiB of dynamic shared memory, which the launch opts in to; they fit every GPU with cp.async
//    (99 KiB a block on compute capability 8.6 and 8.9). A GPU with less runs -DSTAGES=2 (64 KiB),
//    the double-buffered loop below.
// 5. The copies' addresses are worked out once, before the k loop: a tile's are a pointer moved BK
//    columns (A) or BK rows (B) plus constants. Worked out per tile they took 4% more instructions
//    (Nsight Compute), though the time did not change measurably.
//
// Why it is faster: on the H100 (CUDA 13.0, tuning test, 2026-11-26) this build took 2.96 ms at
// 4096^3, 90% of cuBLAS fp32's speed (2.66 ms) in the same run: half the barriers and waits per FMA
// of 16-deep tiles, two tiles in flight instead of one, every shared access conflict-free. The
// same build with padded rows (-DPADDED) took 3.23 ms (82%). Nsight Compute counts the same
// shared-memory wavefronts and no bank conflicts for both; what differs is the stalls: with the
// swizzle, warps wait half as long on the copies (long-scoreboard stalls 0.06 against 0.13 an
// instruction) and the schedulers issue in 78% of cycles instead of 71%. A likely cause: a
// swizzled row is one aligned 128-byte line of shared memory, a padded row straddles two.
// What limits it: 167 registers a thread and 96 KiB of shared memory leave room for one block of
// 8 warps per SM, two warps per scheduler; when both wait, the scheduler idles.
//
// Tuning builds (the lesson's tuning test, MATMUL_TUNE=1, times them; the same run):
//   -DPADDED          A rows padded to BK + 4 words instead of swizzled: 3.23 ms.
//   -DBN=256 -DWN=64  wider warp tiles of 64 x 64 (8 x 16 outputs a thread, 255 registers) in
//                     128 x 256 blocks: 2.97 ms, no faster.
//   -DWN=64 -DMIN_BLOCKS=2  128 x 128 blocks of 4 warps of 64 x 64, two blocks per SM: 2.99 ms.
//   -DMIN_BLOCKS=2    registers capped at 128 for two blocks per SM: 3.14 ms (8 bytes spilled).
//   -DSTAGES=2, 4     pipeline depth: 3.06 ms with 2 stages; 2.93 ms with 4 (128 KiB, over the
//                     99 KiB a block of compute capability 8.6 and 8.9).
//   -DBK=16           k tiles 16 deep: 3.07 ms with 3 stages, 3.23 ms with 2 (the step's first form).
// A build whose stages fit in 48 KiB (2 or 3 stages of BK = 16) declares them static; the others
// take dynamic shared memory.
//
// Launch: block 2 x BN/WN warps (256); grid (N/BN, M/128) ((N/128, M/128)); dynamic shared memory as
// above. Limits: M % 128 == 0, N % BN == 0, K % BK == 0 (128 and 32 by default), A, B, C 16-byte
// aligned (cp.async and float4), STAGES x 32 KiB of shared memory per block.
// Needs: compute capability 8.0 (cp.async).
#define BM 128
#ifndef BN
#define BN 128  // block tile columns: 128 or 256
#endif
#ifndef WN
#define WN 32  // warp tile columns: 32 (8 x 8 outputs a thread) or 64 (8 x 16)
#endif
#ifndef BK
#define BK 32  // k depth of a tile: 32 or 16
#endif
#ifndef STAGES
#define STAGES 3  // cp.async pipeline depth: 3, 2 or 4
#endif
#define NJ (WN / 16)                  // float4 column groups a lane owns: 2 or 4
#define THREADS (2 * (BN / WN) * 32)  // 2 warp rows x BN/WN warp columns
#define CHUNKS (BK / 4)               // 16-byte chunks in a row of the A tile: 8 or 4
#ifdef PADDED
#define SA (BK + 4)  // the A tile's rows padded by 4 words instead of swizzled (the layout before)
#else
#define SA BK
#endif
#define STAGE_FLOATS (BM * SA + BK * BN)
#if STAGES * STAGE_FLOATS * 4 > 48 * 1024
#define DYNAMIC_SMEM 1
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1  // blocks per SM asked of the compiler: 2 caps registers at 65536 / (2 THREADS)
#endif
static_assert(STAGES >= 2 && (BK == 16 || BK == 32), "7: STAGES >= 2, BK 16 or 32");
static_assert((BN == 128 || BN == 256) && (WN == 32 || WN == 64), "7: BN 128 or 256, WN 32 or 64");
static_assert(BM * BK / 4 % THREADS == 0 && BK * BN / 4 % THREADS == 0, "7: every thread copies the same number of float4");

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void cp_async16(unsigned dst, const void *src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}

__device__ __forceinline__ float comp(const float4 &v, int c) { return c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w; }

// swz is the XOR key of row r of the A tile: chunk c of the row is stored at chunk c ^ swz(r). With
// 8 chunks a row (BK = 32) it is r mod 8; with 4 (BK = 16, two rows span the 32 banks) it is
// (r / 2) mod 4. Either way 8 consecutive rows' copies of one chunk fall in 8 different bank groups.
// (With -DPADDED the rows are SA = BK + 4 words apart instead and the key is 0.)
__device__ __forceinline__ int swz(int r) {
#ifdef PADDED
    return 0;
#else
    return CHUNKS == 8 ? r & 7 : (r >> 1) & 3;
#endif
}

// warp_tile_step does one k tile's products for the thread's 8 x 4 NJ outputs: as and bs are the
// stage's A tile (BM rows of SA floats, swizzled) and B tile (BK rows of BN), the warp tile at
// (wm, wn); key is swz of the thread's rows (the same for all 8: they are 8 apart).
__device__ __forceinline__ void warp_tile_step(float (&acc)[8][4 * NJ], const float *as, const float *bs, int wm, int wn, int lm,
                                               int ln, int key) {
#pragma unroll
    for (int kc = 0; kc < BK; kc += 4) {
        float4 a[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) a[i] = *reinterpret_cast<const float4 *>(as + (wm + lm + 8 * i) * SA + 4 * ((kc / 4) ^ key));
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
            float4 b[NJ];
#pragma unroll
            for (int j = 0; j < NJ; ++j) b[j] = *reinterpret_cast<const float4 *>(bs + (kc + kk) * BN + wn + 16 * j + 4 * ln);
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                const float av = comp(a[i], kk);
#pragma unroll
                for (int j = 0; j < NJ; ++j) {
                    acc[i][4 * j + 0] += av * b[j].x;
                    acc[i][4 * j + 1] += av * b[j].y;
                    acc[i][4 * j + 2] += av * b[j].z;
                    acc[i][4 * j + 3] += av * b[j].w;
                }
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS) mm_warptile(const float *__restrict__ A, const float *__restrict__ B,
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
    const int wm = (warp / (BN / WN)) * 64, wn = (warp % (BN / WN)) * WN;  // warp tile origin in the block tile
    const int lm = lane & 7, ln = lane >> 3;
    const unsigned by = blockIdx.y, bx = blockIdx.x;

    // The copies: thread tid copies chunk ac of rows ar + l A_STEP of each A tile and the float4 at
    // column bc of rows br + l B_STEP of each B tile. A_STEP is a multiple of 8, so all its A rows
    // share one XOR key, and the shared-memory addresses are a stage's base plus constants.
    constexpr int A_STEP = THREADS / CHUNKS, B_STEP = THREADS / (BN / 4);
    const int ar = tid / CHUNKS, ac = tid % CHUNKS, br = tid / (BN / 4), bc = tid % (BN / 4) * 4;
    const float *a_src = A + (size_t)(by * BM + ar) * K + 4 * ac;
    const float *b_src = B + (size_t)br * N + bx * BN + bc;
    const size_t a_stride = (size_t)A_STEP * K, b_stride = (size_t)B_STEP * N;
    const unsigned a_dst = smem_u32(&As[0][ar * SA + 4 * (ac ^ swz(ar))]), b_dst = smem_u32(&Bs[0][br * BN + bc]);

    auto load = [&](int stage, int t) {  // k tile t into stage
        const float *a = a_src + t * BK, *b = b_src + (size_t)t * BK * N;
#pragma unroll
        for (int l = 0; l < BM * BK / 4 / THREADS; ++l)  // A: 128 rows x CHUNKS float4
            cp_async16(a_dst + 4 * (stage * BM * SA + l * A_STEP * SA), a + l * a_stride);
#pragma unroll
        for (int l = 0; l < BK * BN / 4 / THREADS; ++l)  // B: BK rows x BN / 4 float4
            cp_async16(b_dst + 4 * (stage * BK * BN + l * B_STEP * BN), b + l * b_stride);
    };
    auto commit = [] { asm volatile("cp.async.commit_group;" ::: "memory"); };

    const int key = swz(lm);  // the thread's A rows are wm + lm + 8i: the key of lm
    float acc[8][4 * NJ] = {{0.0f}};
    const int tiles = K / BK;
#if STAGES == 2
    load(0, 0);
    commit();
    for (int t = 0; t < tiles; ++t) {
        const int s = t & 1;
        if (t + 1 < tiles) {
            load(s ^ 1, t + 1);
            commit();
            asm volatile("cp.async.wait_group 1;" ::: "memory");
        } else {
            asm volatile("cp.async.wait_group 0;" ::: "memory");
        }
        __syncthreads();
        warp_tile_step(acc, As[s], Bs[s], wm, wn, lm, ln, key);
        __syncthreads();  // the next iteration's copy overwrites the stage read here
    }
#else
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {  // tiles 0 .. STAGES - 2 in flight; an empty group past the end
        if (s < tiles) load(s, s);
        commit();
    }
    int rs = 0, ws = STAGES - 1;  // the stage read this iteration, the stage refilled
    for (int t = 0; t < tiles; ++t) {
        asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2) : "memory");  // tile t has landed (this thread's part)
        __syncthreads();  // every thread's part of tile t is visible, and every thread is done with tile t - 1
        if (t + STAGES - 1 < tiles) load(ws, t + STAGES - 1);  // into the stage tile t - 1 used
        commit();  // an empty group at the end keeps the count that wait_group relies on
        warp_tile_step(acc, As[rs], Bs[rs], wm, wn, lm, ln, key);
        rs = rs + 1 == STAGES ? 0 : rs + 1;
        ws = ws + 1 == STAGES ? 0 : ws + 1;
    }
#endif
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        float *c = C + (size_t)(by * BM + wm + lm + 8 * i) * N + bx * BN + wn + 4 * ln;
#pragma unroll
        for (int j = 0; j < NJ; ++j)
            *reinterpret_cast<float4 *>(c + 16 * j) = make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]);
    }
}

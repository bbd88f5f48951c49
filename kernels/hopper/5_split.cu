// Step 5: float32 accuracy from Hopper's fp16 tensor cores: the split, on wgmma.
//
// What changed from step 4: the numbers. Steps 1-4 multiply 16-bit inputs; this step takes float32
// A and B and returns float32 C with float32 accuracy, as lesson 03's step 9 does with mma.sync.
// Each input is split once, before the product, by hg_split_halves (in this file):
//     hi = fp16(x),  lo = fp16((x - hi) * 2^11)        (scaled so that lo stays a normal number)
// and the product is assembled from three fp16 products on the tensor cores:
//     A B ~= Ahi Bhi + (Ahi Blo + Alo Bhi) / 2^11      (Alo Blo, about 2^-22 of A B, is dropped)
// The tensor core sums in float32 but truncates, and over K = 4096 that bias would dominate the
// error of the main product. So each 64-deep k tile of Ahi Bhi goes into fresh registers (the first
// wgmma of the tile has scale-d = 0), which are then added to the running total with ordinary,
// rounding float32 adds; the two corrections, 2^11 smaller, share one accumulator of their own.
// Three accumulators of 64 x 128 per consumer warpgroup: 192 registers per thread, which is why
// the tile is 128 x 128 (two consumers of 64 rows) rather than step 4's 128 x 256.
// Everything else is step 4's: clusters of 2 blocks share the B tiles (hi and lo) by TMA
// multicast, persistent blocks walk 256 x 128 super-tiles in bands, a producer warpgroup keeps a
// ring of stages full. One stage holds Ahi, Alo (128 x 64 each) and Bhi, Blo (64 x 128 each): 64 KiB.
// The epilogue writes float32 pairs straight from registers: a quad of threads covers 32
// contiguous bytes of a row, whole sectors, so staging through shared memory would buy nothing.
// Slices of K, for outputs too small to give every cluster a super-tile (a 256 x 256 C is 2 of
// them, for 66 clusters on 132 SMs): the work is (super-tile, slice) pairs, a slice taking an equal
// share of the k tiles, and slice s writes its partial C into a workspace at s x M x N. Then
// hg_sum_slices adds the slices in order, 0 first, in float32: the same sum on every run, which
// atomics into C would not give. With one slice the product writes C itself.
// Launch: hg_split_halves over A (M x K into M x Kp) and over B (K x N into Kp x Np), Kp and Np
// rounded up to multiples of 8 (4 elements a thread, blocks of 256 threads: below); then hg_split_product with grid
// 2 x (clusters that fit), block 384, STAGES x 64 KiB + 1 KiB of dynamic shared memory (3 stages:
// 193 KiB), K = Kp and C the workspace where slices > 1; then, with slices, hg_sum_slices.
// Tensor maps: Ahi and Alo (M x Kp) with 128 x 64 boxes, Bhi and Blo (Kp x Np) with 64 x 64 boxes,
// fp16, 128-byte swizzled.
// Limits: none on the shape (the split pads); |x| < 65504 (fp16's largest; the caller checks).
// Needs: compute capability 9.0a (wgmma, TMA multicast, clusters and setmaxnreg: Hopper only).
#include <cuda_fp16.h>

typedef unsigned long long u64;
typedef unsigned int u32;
typedef __half elem;
#define WGMMA_IN "f16"
#define LO_SCALE 2048.0f

// The shared-memory address of p, as the PTX instructions on shared memory take it.
__device__ __forceinline__ u32 smem_addr(const void *p) { return (u32)__cvta_generic_to_shared(p); }

// wgmma reads its operands from shared memory through a 64-bit matrix descriptor (PTX ISA, "matrix
// descriptor format"): bits 0-13 the start address / 16, bits 16-29 the leading byte offset / 16,
// bits 32-45 the stride byte offset / 16, bits 62-63 the swizzle mode (1: 128 bytes). With the
// 128-byte swizzle, a tile is a stack of 8-row x 128-byte atoms (1024 bytes, 1024-byte aligned):
//   K-major A (rows of K): 8 rows of M per atom, the next 8 rows SBO = 1024 bytes on; a row holds
//       64 halves of K, so a 16-deep slice of K starts 32 bytes into the row (LBO is unused);
//   N-major B (rows of N): 8 rows of K per atom, the next 8 rows SBO = 1024 bytes on; a row holds 64
//       halves of N, and the next 64 columns of N are LBO bytes on (the next panel).
__device__ __forceinline__ u64 smem_desc(const void *p, u32 lbo, u32 sbo) {
    return (u64)((smem_addr(p) & 0x3FFFF) >> 4) | ((u64)((lbo & 0x3FFFF) >> 4) << 16) |
           ((u64)((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}

// wgmma is asynchronous: fence before the first one reads registers or shared memory others wrote,
// commit the issued ones as a group, and wait until at most N groups are still running.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// A TMA descriptor (the driver's CUtensorMap, made on the host by cuTensorMapEncodeTiled), taken by
// value as a __grid_constant__ parameter: the TMA unit reads it where the launch put it.
struct __align__(64) TensorMap { u64 words[16]; };

// mbarriers are 8-byte counters in shared memory with a phase bit. A phase completes when its
// expected arrivals have arrived and the bytes announced with expect_tx have landed; waiters spin
// on the parity of the phase they expect.
__device__ __forceinline__ void mbar_init(u64 *bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(u64 *bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(u64 *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(u64 *bar, u32 parity) {
    u32 done;
    asm volatile("{\n.reg .pred p;\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
    return done != 0;
}
__device__ __forceinline__ void mbar_wait(u64 *bar, u32 parity) {
    while (!mbar_try_wait(bar, parity)) {
    }
}
// Makes the barriers' initialisation visible to the TMA unit (and to the cluster) before use.
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

// One TMA load: the box of map at column x, row y lands in shared memory at dst (swizzled as the
// map says) and reports its bytes to bar. Parts of the box past the tensor's edge are zeros.
__device__ __forceinline__ void tma_load(void *dst, const TensorMap *map, int x, int y, u64 *bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 ::"r"(smem_addr(dst)), "l"((u64)map), "r"(x), "r"(y), "r"(smem_addr(bar)) : "memory");
}

// D[64 x 128] += A[64 x 16] * B[16 x 128]: A from a K-major tile, B from an N-major one (trans-b = 1).
// scaleD 0 starts the sum (D = A B), 1 adds to it.
__device__ __forceinline__ void wgmma_n128(float *d, u64 descA, u64 descB, int scaleD) {
    asm volatile(
        "{\n.reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32." WGMMA_IN "." WGMMA_IN "\n"
        "{" 
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1, 0, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(descA), "l"(descB), "r"(scaleD));
}

#define BM 128
#define BN 128
#define BK 64
#ifndef STAGES
#define STAGES 3
#endif
#ifndef GROUP
#define GROUP 8
#endif
#define A_TILE (BM * BK)  // elements of one 16-bit tile of A (hi or lo): 16 KiB
#define B_TILE (BK * BN)  // of B: two 64-column panels, 16 KiB
#define STAGE (2 * A_TILE + 2 * B_TILE)
#define CONSUMERS 2

// hi = fp16(x), lo = fp16((x - hi) * LO_SCALE) for x (rows x cols, row-major), written as a
// rowsOut x colsOut matrix whose extra rows and columns are zeros: padded to multiples of 8, the
// halves have the 16-byte row strides TMA needs whatever the shape, and the zeros add nothing to
// the product. A thread converts 4 consecutive elements of a row (one float4 read where the row
// allows it, two 8-byte writes) and walks down the rows: no 64-bit division per element, which
// left a thread-per-element pass issue-bound well under the copy bandwidth.
// Launch: block (bx, 256 / bx) with bx = colsOut / 4 rounded up to a multiple of 32, at most 256;
// grid (ceil(colsOut / 4 / bx), ceil(rowsOut / by), at most 65535 rows of blocks).
extern "C" __global__ void hg_split_halves(const float *__restrict__ x, elem *__restrict__ hi, elem *__restrict__ lo,
                                           int rows, int cols, int rowsOut, int colsOut) {
    const int c = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
    if (c >= colsOut) return;
    const bool vec = (cols & 3) == 0 && c + 3 < cols;
    for (int r = blockIdx.y * blockDim.y + threadIdx.y; r < rowsOut; r += gridDim.y * blockDim.y) {
        float v[4] = {0.f, 0.f, 0.f, 0.f};
        if (r < rows) {
            const float *src = x + (size_t)r * cols + c;
            if (vec) {
                const float4 f = *(const float4 *)src;
                v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
            } else {
#pragma unroll
                for (int q = 0; q < 4; q++) v[q] = c + q < cols ? src[q] : 0.f;
            }
        }
        uint2 h, l;
        u32 *hw = (u32 *)&h, *lw = (u32 *)&l;
#pragma unroll
        for (int q = 0; q < 2; q++) {
            const __half2 p = __floats2half2_rn(v[2 * q], v[2 * q + 1]);
            const __half2 s = __floats2half2_rn((v[2 * q] - __low2float(p)) * LO_SCALE, (v[2 * q + 1] - __high2float(p)) * LO_SCALE);
            hw[q] = *(const u32 *)&p;
            lw[q] = *(const u32 *)&s;
        }
        const size_t at = (size_t)r * colsOut + c;
        *(uint2 *)(hi + at) = h;
        *(uint2 *)(lo + at) = l;
    }
}

__device__ __forceinline__ u32 cluster_rank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// Arrives on the barrier at bar's offset in block peer of the cluster, releasing at block scope
// (step 4 measures what a cluster-scope release costs).
__device__ __forceinline__ void mbar_arrive_cluster(u64 *bar, u32 peer) {
    asm volatile("{\n.reg .b32 remote;\n"
                 "mapa.shared::cluster.u32 remote, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n"
                 ::"r"(smem_addr(bar)), "r"(peer) : "memory");
}
__device__ __forceinline__ void tma_load_multicast(void *dst, const TensorMap *map, int x, int y, u64 *bar, unsigned short mask) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n"
                 ::"r"(smem_addr(dst)), "l"((u64)map), "r"(x), "r"(y), "r"(smem_addr(bar)), "h"(mask) : "memory");
}
__device__ __forceinline__ void super_tile(int i, int rows, int cols, int *r, int *c) {
    const int band = i / (GROUP * cols), first = band * GROUP;
    const int height = min(GROUP, rows - first);
    const int j = i % (GROUP * cols);
    *r = first + j % height;
    *c = j / height;
}

// The first k tile of slice s of K's tiles: slices take equal shares, give or take one tile.
__device__ __forceinline__ int k_tile_at(int s, int tiles, int slices) { return (int)((long long)s * tiles / slices); }

// Writes total + corr / LO_SCALE for a consumer's 64 x 128 tile, masked at the edge (the fragment
// layout of store_tile in steps 1-3): float32 pairs where N is even, one by one where it is not.
__device__ __forceinline__ void store_sum(const float *total, const float *corr, float *C, int M, int N, int row0, int col0) {
    const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
    const int r = row0 + 16 * warp + lane / 4;
#pragma unroll
    for (int j = 0; j < 16; j++) {
        const int c = col0 + 8 * j + 2 * (lane % 4);
        if (c < N) {
            const float2 top = make_float2(total[4 * j] + corr[4 * j] / LO_SCALE, total[4 * j + 1] + corr[4 * j + 1] / LO_SCALE);
            const float2 bot = make_float2(total[4 * j + 2] + corr[4 * j + 2] / LO_SCALE, total[4 * j + 3] + corr[4 * j + 3] / LO_SCALE);
            if ((N & 1) == 0) {  // pairs are 8-byte aligned
                if (r < M) *(float2 *)&C[(size_t)r * N + c] = top;
                if (r + 8 < M) *(float2 *)&C[(size_t)(r + 8) * N + c] = bot;
            } else {
                const bool two = c + 1 < N;
                if (r < M) {
                    C[(size_t)r * N + c] = top.x;
                    if (two) C[(size_t)r * N + c + 1] = top.y;
                }
                if (r + 8 < M) {
                    C[(size_t)(r + 8) * N + c] = bot.x;
                    if (two) C[(size_t)(r + 8) * N + c + 1] = bot.y;
                }
            }
        }
    }
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128 * (CONSUMERS + 1), 1)
    hg_split_product(const __grid_constant__ TensorMap mapAhi, const __grid_constant__ TensorMap mapAlo,
                     const __grid_constant__ TensorMap mapBhi, const __grid_constant__ TensorMap mapBlo,
                     float *__restrict__ C, int M, int N, int K, int slices) {
    extern __shared__ unsigned char smem_raw[];
    elem *ring = (elem *)(((size_t)smem_raw + 1023) & ~(size_t)1023);
    __shared__ __align__(8) u64 full[STAGES], empty[STAGES];
    const int wg = threadIdx.x / 128;
    const u32 rank = cluster_rank(), peer = rank ^ 1;
    const int tiles = (K + BK - 1) / BK;
    const int rows = (M + 2 * BM - 1) / (2 * BM), cols = (N + BN - 1) / BN;
    const int units = rows * cols * slices, clusters = gridDim.x / 2, cluster = blockIdx.x / 2;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 2 * CONSUMERS * 4);  // every consumer warp of both blocks
        }
        mbar_init_fence();
    }
    cluster_sync();
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x == 0) {
            int g = 0;
            for (int i = cluster; i < units; i += clusters) {
                int sr, sc;
                super_tile(i / slices, rows, cols, &sr, &sc);
                const int row0 = sr * 2 * BM + rank * BM, col0 = sc * BN;
                const int slice = i % slices, t1 = k_tile_at(slice + 1, tiles, slices);
                for (int t = k_tile_at(slice, tiles, slices); t < t1; t++, g++) {
                    const int s = g % STAGES;
                    elem *st = ring + s * STAGE;
                    if (g >= STAGES) mbar_wait(&empty[s], (g / STAGES - 1) & 1);
                    mbar_expect_tx(&full[s], STAGE * sizeof(elem));
                    tma_load(st, &mapAhi, t * BK, row0, &full[s]);
                    tma_load(st + A_TILE, &mapAlo, t * BK, row0, &full[s]);
                    // This block loads panel `rank` of Bhi and of Blo for both blocks.
                    tma_load_multicast(st + 2 * A_TILE + rank * BK * 64, &mapBhi, col0 + 64 * rank, t * BK, &full[s], 3);
                    tma_load_multicast(st + 2 * A_TILE + B_TILE + rank * BK * 64, &mapBlo, col0 + 64 * rank, t * BK, &full[s], 3);
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        const int half = wg - 1;
        int g = 0;
        float total[64], tmp[64], corr[64];
        for (int i = cluster; i < units; i += clusters) {
            int sr, sc;
            super_tile(i / slices, rows, cols, &sr, &sc);
            const int row0 = sr * 2 * BM + rank * BM, col0 = sc * BN;
            const int slice = i % slices, t1 = k_tile_at(slice + 1, tiles, slices);
#pragma unroll
            for (int j = 0; j < 64; j++) total[j] = corr[j] = 0.f;
            for (int t = k_tile_at(slice, tiles, slices); t < t1; t++, g++) {
                const int s = g % STAGES;
                const elem *st = ring + s * STAGE;
                const elem *ahi = st + half * 64 * BK, *alo = st + A_TILE + half * 64 * BK;
                const elem *bhi = st + 2 * A_TILE, *blo = st + 2 * A_TILE + B_TILE;
                mbar_wait(&full[s], (g / STAGES) & 1);
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; kk++)  // this k tile's Ahi Bhi, in fresh registers
                    wgmma_n128(tmp, smem_desc(ahi + 16 * kk, 16, 1024), smem_desc(bhi + 16 * kk * 64, BK * 128, 1024), kk > 0);
#pragma unroll
                for (int kk = 0; kk < BK / 16; kk++) {  // the corrections, summed over all of K
                    wgmma_n128(corr, smem_desc(ahi + 16 * kk, 16, 1024), smem_desc(blo + 16 * kk * 64, BK * 128, 1024), 1);
                    wgmma_n128(corr, smem_desc(alo + 16 * kk, 16, 1024), smem_desc(bhi + 16 * kk * 64, BK * 128, 1024), 1);
                }
                wgmma_commit();
                wgmma_wait<0>();
                if (threadIdx.x % 32 == 0) {
                    mbar_arrive(&empty[s]);
                    mbar_arrive_cluster(&empty[s], peer);
                }
#pragma unroll
                for (int j = 0; j < 64; j++) total[j] += tmp[j];  // rounded float32 adds
            }
            store_sum(total, corr, C + (size_t)slice * M * N, M, N, row0 + 64 * half, col0);
        }
    }
    cluster_sync();
}

// C = the sum of the slices' partial products W[s] (each M x N, mn = M x N elements), added in
// order from slice 0: one thread per element, reading each slice's element in turn.
// Launch: any 1-D grid (the threads walk the elements); 256 threads a block.
extern "C" __global__ void hg_sum_slices(const float *__restrict__ W, float *__restrict__ C, long long mn, int slices) {
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < mn; e += (long long)gridDim.x * blockDim.x) {
        float sum = W[e];
        for (int s = 1; s < slices; s++) sum += W[s * mn + e];
        C[e] = sum;
    }
}

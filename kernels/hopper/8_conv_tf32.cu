// Step 8: the deep convolution in TF32: step 7's implicit GEMM on step 6's TF32 products.
//
// What changed from step 7: the format, and with it the layout of the filters. TF32 wgmma takes both
// operands K-major (step 6), so the filters are written as Bt: one row per filter, its taps and
// channels in k order (tap-major, then channel), rounded to TF32 (cvt.rna: the tensor core itself
// would truncate). x's NHWC copy is float32, rounded the same way; a 128-byte row of a swizzle atom
// holds 32 of its channels, so a k tile is one tap's 32 channels, BK = 32, and four wgmma m64n256k8
// cover it. Both operands come from TMA boxes: A from the 4-dimensional image map as in step 7
// (32 channels x bw x 128/bw x 1), Bt from the filters' map (channel, tap, filter) with boxes of
// 32 x 1 x 128, each cluster block loading half of the 256 filters for both by multicast, as in
// step 6. The epilogue is step 7's.
// Launch: hg_conv_nhwc_tf32 with grid (ceil(H*W / 32), ceil(Cp / 32), N), block (32, 8);
// hg_conv_filters_tf32 with grid (ceil(K / 32), ceil(Cp / 32)), block (32, 8); then hg_conv_tf32 with
// grid 2 x (clusters that fit), block 384, STAGES x 48 KiB + 1 KiB of dynamic shared memory.
// Limits: stride 1; any N, C, H, W, K, R and padding (Cp is C padded to a multiple of 4 floats).
// Needs: compute capability 9.0a (wgmma, TMA multicast, clusters and setmaxnreg: Hopper only).

typedef unsigned long long u64;
typedef unsigned int u32;

// The shared-memory address of p, as the PTX instructions on shared memory take it.
__device__ __forceinline__ u32 smem_addr(const void *p) { return (u32)__cvta_generic_to_shared(p); }

// wgmma reads its operands from shared memory through a 64-bit matrix descriptor (PTX ISA, "matrix
// descriptor format"): bits 0-13 the start address / 16, bits 16-29 the leading byte offset / 16,
// bits 32-45 the stride byte offset / 16, bits 62-63 the swizzle mode (1: 128 bytes). With the
// 128-byte swizzle, a tile is a stack of 8-row x 128-byte atoms (1024 bytes, 1024-byte aligned):
//   K-major A and Bt (rows of K): 8 rows per atom, the next 8 rows SBO = 1024 bytes on; a row holds
//       32 floats of K, so an 8-deep slice of K starts 32 bytes into the row (LBO is unused).
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

// D[64 x 256] += A[64 x 8] * B[8 x 256]: both from K-major tiles (TF32 has no transposed form).
// scaleD 0 starts the sum (D = A B), 1 adds to it.
__device__ __forceinline__ void wgmma_tf32_n256(float *d, u64 descA, u64 descB, int scaleD) {
    asm volatile(
        "{\n.reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32\n"
        "{" 
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(descA), "l"(descB), "r"(scaleD));
}

#define BM 128
#define BN 256
#define BK 32  // channels of one k tile: a 128-byte row of float32
#ifndef STAGES
#define STAGES 4
#endif
#ifndef GROUP
#define GROUP 8
#endif
#define A_STAGE (BM * BK)  // floats of one stage of A: 16 KiB
#define B_STAGE (BN * BK)  // of Bt: 32 KiB
#define CONSUMERS 2

// x rounded to TF32 (round to nearest, ties away: cvt.rna), as float32 bits.
__device__ __forceinline__ float tf32(float x) {
    u32 bits;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(bits) : "f"(x));
    return __uint_as_float(bits);
}

// xt[n][p][c] = tf32(x[n][c][p]) for the H*W pixels p of image n, zeros for C <= c < Cp: a 32 x 32
// tile through shared memory, so both the reads (along pixels) and the writes (along channels)
// coalesce.
extern "C" __global__ void hg_conv_nhwc_tf32(const float *__restrict__ x, float *__restrict__ xt, int C, int HW, int Cp) {
    __shared__ float tile[32][33];
    const int p0 = blockIdx.x * 32, c0 = blockIdx.y * 32, n = blockIdx.z;
    const float *img = x + (size_t)n * C * HW;
    for (int i = threadIdx.y; i < 32; i += 8) {
        const int c = c0 + i, p = p0 + threadIdx.x;
        tile[i][threadIdx.x] = (c < C && p < HW) ? tf32(img[(size_t)c * HW + p]) : 0.f;
    }
    __syncthreads();
    float *out = xt + (size_t)n * HW * Cp;
    for (int i = threadIdx.y; i < 32; i += 8) {
        const int p = p0 + i, c = c0 + threadIdx.x;
        if (p < HW && c < Cp) out[(size_t)p * Cp + c] = tile[threadIdx.x][i];
    }
}

// wt[k][tap][c] = tf32(w[k][c][tap]) for the RR = R x R taps, zeros for C <= c < Cp: one block per
// filter and 32 channels; the reads of w[k] are contiguous over (c, tap), the writes over c.
extern "C" __global__ void hg_conv_filters_tf32(const float *__restrict__ w, float *__restrict__ wt, int K, int C, int RR, int Cp) {
    const int k = blockIdx.x, c = blockIdx.y * 32 + threadIdx.x;
    if (k >= K || c >= Cp) return;
    for (int tap = threadIdx.y; tap < RR; tap += blockDim.y)
        wt[((size_t)k * RR + tap) * Cp + c] = c < C ? tf32(w[((size_t)k * C + c) * RR + tap]) : 0.f;
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
// TMA loads of a box of a 4-dimensional map (an NHWC image batch: channel, x, y, image) and of a
// 3-dimensional one (the filters), multicast to the blocks of the cluster in mask. A coordinate
// may be negative or past the extent: that part of the box is zeros, which is the convolution's
// padding.
__device__ __forceinline__ void tma_load_4d(void *dst, const TensorMap *map, int c, int x, int y, int n, u64 *bar) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n"
                 ::"r"(smem_addr(dst)), "l"((u64)map), "r"(c), "r"(x), "r"(y), "r"(n), "r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void tma_load_3d_multicast(void *dst, const TensorMap *map, int a, int b, int c, u64 *bar, unsigned short mask) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3, %4}], [%5], %6;\n"
                 ::"r"(smem_addr(dst)), "l"((u64)map), "r"(a), "r"(b), "r"(c), "r"(smem_addr(bar)), "h"(mask) : "memory");
}
// Super-tile i of a grid of rows x cols super-tiles, in bands of GROUP rows walked column by column.
__device__ __forceinline__ void super_tile(int i, int rows, int cols, int *r, int *c) {
    const int band = i / (GROUP * cols), first = band * GROUP;
    const int height = min(GROUP, rows - first);
    const int j = i % (GROUP * cols);
    *r = first + j % height;
    *c = j / height;
}

// The output pixels of M tile m: image n, rows oh0 .. oh0 + 128/bw - 1 and columns ow0 .. ow0 + bw - 1
// (bw = 1 << bwLog2, a power of two from 8 to 128). Tiles run over columns, then rows, then images.
struct PixelTile { int n, oh0, ow0; };
__device__ __forceinline__ PixelTile pixel_tile(int m, int tilesW, int tilesH, int bwLog2) {
    PixelTile t;
    const int perImage = tilesW * tilesH;
    t.n = m / perImage;
    const int r = m - t.n * perImage;
    t.oh0 = (r / tilesW) * (128 >> bwLog2);
    t.ow0 = (r % tilesW) << bwLog2;
    return t;
}

// The epilogue's constants of a consumer's tile, in shared memory: entry i holds filters col0 + 2i
// and col0 + 2i + 1 as {bias, bias, bias2, bias2} (zeros past K, and for bias2 when there is none),
// so the thread that stores a filter pair reads both biases with one 16-byte load, broadcast to the
// 8 threads of the pair. The two consumers (both on the same tile) fill it when their tile's filters
// change, before the tile's products, so that the loads from global memory land while the tensor
// cores run. (Reading bias[k] from global memory at each store made the epilogue wait on a load per
// element: the most sampled stall of the whole kernel on KernelBench's conv problems.) As step 7.
__device__ __forceinline__ void fill_epilogue(float4 *e, const float *__restrict__ bias, const float *__restrict__ bias2, int col0, int K) {
    for (int i = threadIdx.x - 128; i < BN / 2; i += 128 * CONSUMERS) {
        const int k = col0 + 2 * i;
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (k < K) v.x = bias[k], v.z = bias2 != nullptr ? bias2[k] : 0.f;
        if (k + 1 < K) v.y = bias[k + 1], v.w = bias2 != nullptr ? bias2[k + 1] : 0.f;
        e[i] = v;
    }
}
// A named barrier (id 1; 0 is __syncthreads) for the consumers' threads alone.
__device__ __forceinline__ void consumer_sync() { asm volatile("bar.sync 1, %0;\n" ::"n"(128 * CONSUMERS) : "memory"); }

// Writes a consumer's 64 x BN float32 tile (rows: pixels of the tile from row0 on; columns:
// filters col0 ..) into y (N, K, OH, OW) through the epilogue, masking pixels and filters past the
// edge: v = acc + bias[k], then max(v, 0) when relu is set, then + bias2[k] (KernelBench's level-2
// conv + ReLU + bias in one pass over y).
// Thread t of warp w holds rows 16w + t/4 and +8, columns 8j + 2(t%4) and +1 (d[4j .. 4j+3]): the 8
// threads of a column pair hold 8 consecutive pixels of a row, so each store instruction writes
// 32-byte runs of y, whole sectors. With no load left in it, the test of each filter against K is
// a predicate on its store, not a branch.
__device__ __forceinline__ float epilogue(float acc, float b, float b2, int relu) {
    const float v = acc + b;
    return (relu ? fmaxf(v, 0.f) : v) + b2;
}
__device__ __forceinline__ void store_nchw(const float *d, float *__restrict__ y, const float4 *e, int relu, PixelTile t,
                                           int row0, int col0, int bwLog2, int N, int K, int OH, int OW) {
    const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32, q = lane % 4;
    const size_t plane = (size_t)OH * OW;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int r = row0 + 16 * warp + lane / 4 + 8 * h;
        const int oh = t.oh0 + (r >> bwLog2), ow = t.ow0 + (r & ((1 << bwLog2) - 1));
        if (t.n >= N || oh >= OH || ow >= OW) continue;
        float *out = y + ((size_t)t.n * K + col0 + 2 * q) * plane + (size_t)oh * OW + ow;
#pragma unroll
        for (int j = 0; j < BN / 8; j++) {
            const int k = col0 + 8 * j + 2 * q;
            const float4 c = e[4 * j + q];
            if (k < K) out[8 * j * plane] = epilogue(d[4 * j + 2 * h], c.x, c.z, relu);
            if (k + 1 < K) out[(8 * j + 1) * plane] = epilogue(d[4 * j + 2 * h + 1], c.y, c.w, relu);
        }
    }
}

// The layer: x's NHWC map (channel, x, y, image; boxes of 32 x bw x 128/bw x 1), the filters' map
// (channel, tap, filter; boxes of 32 x 1 x 128), bias and y (N, K, OH, OW) in float32. cblocks is
// ceil(Cp / 32); bwLog2 the tile's width; tilesW and tilesH how many tiles cover a row and a column.
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128 * (CONSUMERS + 1), 1)
    hg_conv_tf32(const __grid_constant__ TensorMap mapX, const __grid_constant__ TensorMap mapW, const float *__restrict__ bias,
            float *__restrict__ y, int N, int K, int OH, int OW, int R, int P, int cblocks, int bwLog2, int tilesW, int tilesH,
            const float *__restrict__ bias2, int relu) {
    extern __shared__ unsigned char smem_raw[];
    float *sA = (float *)(((size_t)smem_raw + 1023) & ~(size_t)1023);
    float *sB = sA + STAGES * A_STAGE;
    __shared__ __align__(8) u64 full[STAGES], empty[STAGES];
    __shared__ float4 epi[BN / 2];  // the tile's epilogue constants (fill_epilogue)
    const int wg = threadIdx.x / 128;
    const u32 rank = cluster_rank(), peer = rank ^ 1;
    const int tiles = R * R * cblocks;  // k tiles: taps x channel blocks
    const int mtiles = N * tilesH * tilesW;
    const int rows = (mtiles + 1) / 2, cols = (K + BN - 1) / BN;
    const int supers = rows * cols, clusters = gridDim.x / 2, cluster = blockIdx.x / 2;
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
            for (int i = cluster; i < supers; i += clusters) {
                int sr, sc;
                super_tile(i, rows, cols, &sr, &sc);
                // A tile past the last (an odd count) reads image N: all zeros, and stores nothing.
                const PixelTile pt = pixel_tile(2 * sr + rank, tilesW, tilesH, bwLog2);
                const int col0 = sc * BN;
                int r = 0, s = 0, cb = 0;  // the k tile's tap and channel block
                for (int t = 0; t < tiles; t++, g++) {
                    const int st = g % STAGES;
                    if (g >= STAGES) mbar_wait(&empty[st], (g / STAGES - 1) & 1);
                    mbar_expect_tx(&full[st], (A_STAGE + B_STAGE) * sizeof(float));
                    tma_load_4d(sA + st * A_STAGE, &mapX, cb * BK, pt.ow0 - P + s, pt.oh0 - P + r, pt.n, &full[st]);
                    tma_load_3d_multicast(sB + st * B_STAGE + rank * 128 * BK, &mapW, cb * BK, r * R + s, col0 + 128 * rank, &full[st], 3);
                    if (++cb == cblocks) {
                        cb = 0;
                        if (++s == R) s = 0, r++;
                    }
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        const int half = wg - 1;
        int g = 0, ecol = -1;  // ecol: the filters whose constants epi holds
        float d[128];
        for (int i = cluster; i < supers; i += clusters) {
            int sr, sc;
            super_tile(i, rows, cols, &sr, &sc);
            const PixelTile pt = pixel_tile(2 * sr + rank, tilesW, tilesH, bwLog2);
            const int col0 = sc * BN;
            const bool refill = col0 != ecol;
            if (refill) {
                consumer_sync();  // both consumers' stores of their last tile have read the old ones
                fill_epilogue(epi, bias, bias2, col0, K);
                ecol = col0;
            }
#pragma unroll
            for (int j = 0; j < 128; j++) d[j] = 0.f;
            for (int t = 0; t < tiles; t++, g++) {
                const int st = g % STAGES;
                mbar_wait(&full[st], (g / STAGES) & 1);
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 8; kk++)  // k = 8 per wgmma: 32 bytes along both rows
                    wgmma_tf32_n256(d, smem_desc(sA + st * A_STAGE + half * 64 * BK + 8 * kk, 16, 1024),
                                    smem_desc(sB + st * B_STAGE + 8 * kk, 16, 1024), 1);
                wgmma_commit();
                wgmma_wait<1>();
                if (t > 0 && threadIdx.x % 32 == 0) {
                    const int prev = (g - 1) % STAGES;
                    mbar_arrive(&empty[prev]);
                    mbar_arrive_cluster(&empty[prev], peer);
                }
            }
            wgmma_wait<0>();
            if (tiles > 0 && threadIdx.x % 32 == 0) {
                const int last = (g - 1) % STAGES;
                mbar_arrive(&empty[last]);
                mbar_arrive_cluster(&empty[last], peer);
            }
            if (refill) consumer_sync();  // the new constants are in place
            store_nchw(d, y, epi, relu, pt, 64 * half, col0, bwLog2, N, K, OH, OW);
        }
    }
    cluster_sync();
}

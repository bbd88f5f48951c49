// Step 7b, any shape: step 7 with predicated edge tiles, what Multiply runs on a shape off the tiles.
//
// What changed from step 7 (in its first form: 2 stages of k tiles 16 deep, which this file keeps):
// 1. The grid covers M and N with ceil(M/BM) x ceil(N/BN) blocks (tiles of 64 x 128 by default, or
//    others: item 7) and the k loop runs ceil(K/16) tiles, so the last block row and column and the
//    last k tile hang past the matrices' edges.
// 2. Loads past an edge are zero-filled instead of read: cp.async takes a source size below the copy
//    size and fills the rest of the destination with zeros, so a tile element outside A or B is a 0
//    that adds nothing to the dot products, and no branch splits the inner loop.
// 3. A row of A starts 16-byte aligned only when K % 4 == 0, a row of B only when N % 4 == 0. When
//    they do, the tiles are copied in chunks of 4 floats as in step 7 (a chunk is then wholly inside
//    or wholly outside the matrix). When they do not, each thread copies single floats, mapped so
//    that a half-warp reads 16 consecutive k of a row of A and a warp 32 consecutive columns of B
//    (coalesced, and spread over the shared-memory banks). Both tests depend on K and N only, so
//    they are the same for every thread and no warp diverges on them.
// 4. Stores are masked: a row past M is not written, and a column group past N (or any group when
//    N % 4 != 0) is written float by float.
//
// 5. Split K. A product of few tiles (255^3 is 8 blocks of 64 x 128 for 132 SMs; 513 x 129 x 1025
//    is 45 blocks of 64 x 32, 65 k tiles each) would leave most of the GPU idle, so the plan cuts K
//    into S slices, one per blockIdx.z. Two ways to add the slices up, both in slice order 0..S-1
//    (the same sum every run):
//    - On compute capability 9.0, built with -DCLUSTER_K=S (2, 4 or 8, small tiles): the S blocks of
//      a tile are one thread block cluster. Each parks its partial tile in its own shared memory (the
//      pipeline's stages, done with by then), the cluster meets at a barrier, and block q adds up
//      rows [q BM/S, (q+1) BM/S) of the tile from all S blocks' shared memory (distributed shared
//      memory, 16 bytes a load) and writes them to C. One launch, no workspace: the partial sums
//      never leave the chip.
//    - Elsewhere each slice writes its partial tile to a workspace (slice z at W + z * M * N), and
//      mm_sum_slices adds the S partials up into C: a second launch and a pass over S * M * N floats.
// 6. Padding. On a large product whose rows are not aligned (4095^3), single-float copies cost a
//    third of the speed, so Multiply first copies A and B into buffers whose rows are a multiple of 4
//    floats, zero-padded (mm_copy_rows), runs the aligned product, and copies C back: the extra passes
//    are a few percent of the product's time.
//
// 7. Tile size. The tile is a define, BM x BN: 64 x 128 by default, 128 x 128, 128 x 64, 64 x 64 or
//    64 x 32. Every tile keeps the warp tile of step 7's first form (64 x 32, 8 x 8 outputs a
//    thread, the same inner loop); a block has (BM/64) x (BN/32) warps (4 for 64 x 128, 1 for
//    64 x 32) and its load loops run over its own threads. The plan takes 64 x 128 where its blocks give every SM one, else
//    64 x 64 or 64 x 32, whichever leaves fewer outputs past the edges, and splits K where the
//    blocks are under a wave; on compute capability 9.0 it splits K over clusters of 64 x 64 blocks
//    (lessons/matmul's PlanAnyShape). On the H100, 64 x 128 beat 128 x 128
//    on every shape measured: 141.8 against 165.9 µs at 1000 x 3000 x 777 and 3.67 against 3.88 ms
//    at 4095^3, where 128 x 128 took 255 registers a thread (the smaller tiles are capped at 168).
//
// Why: step 3, the only step that took any shape before, runs at a sixth of step 7's rate; the edge
// costs here are a few comparisons per load and store, while the 1024 FMAs a thread does per k tile
// are step 7's (in its first form: this file keeps 2 stages of 16-deep k tiles).
//
// Launch: block BM * BN / 64 (128 for 64 x 128, 64 for 64 x 64); grid (ceil(N/BN), ceil(M/BM), S),
// kTiles = ceil(ceil(K/16) / S) (the last slices may be empty: they add zeros); with S = 1 or
// CLUSTER_K = S, W is not touched (null is fine);
// otherwise W holds S * M * N floats, then mm_sum_slices over the M * N outputs. Limits: any M, N,
// K >= 1; A, B, C 16-byte aligned (their rows need not be); BM 64 or 128, BN 32, 64 or 128;
// CLUSTER_K only where BM * BN floats fit in the stages' shared memory (64 x 64 and 64 x 32).
// Needs: compute capability 8.0 (cp.async).
// Needs: compute capability 9.0 with CLUSTER_K (thread block clusters and distributed shared memory).
#ifndef BM
#define BM 64  // block tile rows: 64 or 128
#endif
#ifndef BN
#define BN 128  // block tile columns: 32, 64 or 128
#endif
#define BK 16
#define SA (BK + 4)
#define WARPS_N (BN / 32)       // warp tiles of 64 x 32 across the block tile
#define THREADS (BM * BN / 64)  // (BM / 64) x (BN / 32) warps
// A block under 256 threads asks the compiler for 12 warps per SM (3 blocks of 64 x 128, 6 of
// 64 x 64), which caps a thread at 168 registers, and its single-float edge loads (16 a thread per
// tile for 64 x 64) unroll 8 at a time: fully unrolled, their hoisted addresses took all 255
// registers and spilled. The 128 x 128 tile is built as it was when it was the default.
#if THREADS == 256
#define BLOCKS_PER_SM 1
#else
#define BLOCKS_PER_SM (384 / THREADS)
#endif
static_assert((BM == 64 || BM == 128) && (BN == 32 || BN == 64 || BN == 128), "7b: BM 64 or 128, BN 32, 64 or 128");

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

// cp_async16 copies 16 bytes from global to shared memory.
__device__ __forceinline__ void cp_async16(void *dst, const void *src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(dst)), "l"(src) : "memory");
}

// cp_async16z copies 16 bytes, or, when ok is false, writes 16 zero bytes (source size 0: nothing is
// read, so src only needs to be a valid address).
__device__ __forceinline__ void cp_async16z(void *dst, const void *src, bool ok) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_u32(dst)), "l"(src), "r"(ok ? 16 : 0) : "memory");
}

// cp_async4 copies one float, or, when ok is false, writes a zero.
__device__ __forceinline__ void cp_async4(float *dst, const float *src, bool ok) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(smem_u32(dst)), "l"(src), "r"(ok ? 4 : 0) : "memory");
}

// log2i is log2 of a power of two, at compile time: tile indices are shifts and masks.
__host__ __device__ constexpr int log2i(int n) { return n <= 1 ? 0 : 1 + log2i(n / 2); }

__device__ __forceinline__ float comp(const float4 &v, int c) { return c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w; }

// store_rows writes rows I0..I1-1 of a thread's 8 x 8 outputs v (rows r0 + 8i, columns c0 + 16h +
// 0..3) into the M x N matrix D, masked at its edges: a row past M is skipped, a group of 4 columns
// is one float4 when the rows are 16-byte aligned (vecB) and the group is inside N, else written
// float by float.
template <int I0, int I1>
__device__ __forceinline__ void store_rows(float *D, const float (&v)[8][8], int M, int N, int r0, int c0, bool vecB) {
#pragma unroll
    for (int i = I0; i < I1; ++i) {
        const int r = r0 + 8 * i;
        if (r >= M) continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int c = c0 + 16 * h;
            float *dst = D + (size_t)r * N + c;
            if (vecB && c + 4 <= N) {
                *reinterpret_cast<float4 *>(dst) = make_float4(v[i][4 * h], v[i][4 * h + 1], v[i][4 * h + 2], v[i][4 * h + 3]);
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    if (c + e < N) dst[e] = v[i][4 * h + e];
            }
        }
    }
}

#ifndef CLUSTER_K
#define CLUSTER_K 1  // blocks of a cluster that split K and add their slices up on chip (9.0): 2, 4 or 8
#endif
#define STAGE_FLOATS (2 * BM * SA + 2 * BK * BN)  // both stages of A, then both of B
static_assert(CLUSTER_K == 1 || (BM * BN <= STAGE_FLOATS && (CLUSTER_K == 2 || CLUSTER_K == 4 || CLUSTER_K == 8)),
              "7b: CLUSTER_K is 2, 4 or 8, for tiles whose outputs fit in the stages' shared memory");

#if CLUSTER_K > 1
__device__ __forceinline__ void cluster_sync() { asm volatile("barrier.cluster.arrive;\n\tbarrier.cluster.wait;" ::: "memory"); }
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
// load_peer reads 16 bytes of block rank's shared memory at the address p has in this block's.
__device__ __forceinline__ float4 load_peer(const float *p, unsigned rank) {
    unsigned remote;
    float4 v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_u32(p)), "r"(rank));
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(remote) : "memory");
    return v;
}
#define CLUSTER_ATTR __cluster_dims__(1, 1, CLUSTER_K)
#else
#define CLUSTER_ATTR
#endif

// blockIdx.z is the slice of K the block sums: k tiles [z * kTiles, (z + 1) * kTiles). With one
// slice the block writes C; with several, its partial tile goes to W + z * M * N (mm_sum_slices adds
// them up), or, built with CLUSTER_K, to its shared memory, where the cluster adds them up.
extern "C" __global__ void CLUSTER_ATTR __launch_bounds__(THREADS, BLOCKS_PER_SM) mm_warptile_any(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, float *__restrict__ W, int M, int N, int K,
                int kTiles) {
    __shared__ __align__(16) float stages[STAGE_FLOATS];
    float(*As)[BM * SA] = reinterpret_cast<float(*)[BM * SA]>(stages);
    float(*Bs)[BK * BN] = reinterpret_cast<float(*)[BK * BN]>(stages + 2 * BM * SA);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = (warp >> log2i(WARPS_N)) * 64, wn = (warp & (WARPS_N - 1)) * 32;
    const int lm = lane & 7, ln = lane >> 3;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const bool vecA = (K & 3) == 0, vecB = (N & 3) == 0;

    auto load = [&](int stage, int k0) {
        if (vecA) {  // A: BM rows x 4 chunks of 4 k, 16 bytes each (a chunk is wholly in or out)
#pragma unroll
            for (int l = 0; l < BM * BK / 4 / THREADS; ++l) {
                const int i = tid + THREADS * l, r = i >> 2, c = (i & 3) * 4;
                const int gr = row0 + r, gk = k0 + c;
                const bool ok = gr < M && gk < K;
                cp_async16z(&As[stage][r * SA + c], ok ? A + (size_t)gr * K + gk : A, ok);
            }
        } else {  // one float each: 16 consecutive k of a row per half-warp (coalesced, few conflicts)
#pragma unroll 8
            for (int l = 0; l < BM * BK / THREADS; ++l) {
                const int i = tid + THREADS * l, r = i >> 4, c = i & 15;
                const int gr = row0 + r, gk = k0 + c;
                const bool ok = gr < M && gk < K;
                cp_async4(&As[stage][r * SA + c], ok ? A + (size_t)gr * K + gk : A, ok);
            }
        }
        if (vecB) {  // B: 16 rows of k x BN / 4 chunks of 4 columns
#pragma unroll
            for (int l = 0; l < BK * BN / 4 / THREADS; ++l) {
                const int i = tid + THREADS * l, r = i >> log2i(BN / 4), c = (i & (BN / 4 - 1)) * 4;
                const int gk = k0 + r, gc = col0 + c;
                const bool ok = gk < K && gc < N;
                cp_async16z(&Bs[stage][r * BN + c], ok ? B + (size_t)gk * N + gc : B, ok);
            }
        } else {  // one float each: a warp copies 32 consecutive columns of a row
#pragma unroll 8
            for (int l = 0; l < BK * BN / THREADS; ++l) {
                const int i = tid + THREADS * l, r = i >> log2i(BN), c = i & (BN - 1);
                const int gk = k0 + r, gc = col0 + c;
                const bool ok = gk < K && gc < N;
                cp_async4(&Bs[stage][r * BN + c], ok ? B + (size_t)gk * N + gc : B, ok);
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    };

    float acc[8][8] = {{0.0f}};
    const int kBase = blockIdx.z * kTiles * BK;
    const int tiles = min(kTiles, (K - kBase + BK - 1) / BK);  // 0 or less: a slice past K (its sum is 0)
    if (tiles > 0) load(0, kBase);
    for (int t = 0; t < tiles; ++t) {
        const int s = t & 1;
        if (t + 1 < tiles) {
            load(s ^ 1, kBase + (t + 1) * BK);
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
        __syncthreads();
    }
    const int r0 = row0 + wm + lm, c0 = col0 + wn + 4 * ln;
#if CLUSTER_K > 1
    // Split K on chip: this block's partial tile into its own shared memory (the stages are free:
    // the loop ended on a barrier, and a slice past K issued no copy), then, after the cluster's
    // barrier, block q adds up its share of the tile's rows from the S blocks in slice order and
    // writes them to C.
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h)
            *reinterpret_cast<float4 *>(stages + (wm + lm + 8 * i) * BN + wn + 16 * h + 4 * ln) =
                make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
    cluster_sync();
    constexpr int ROWS = BM / CLUSTER_K, GROUPS = BN / 4;  // each block's rows; float4s in a row
    const int q = (int)cluster_rank();
    for (int e = tid; e < ROWS * GROUPS; e += THREADS) {
        const int rr = q * ROWS + e / GROUPS, cc = (e % GROUPS) * 4;
        const float *p = stages + rr * BN + cc;
        float4 sum = load_peer(p, 0);
#pragma unroll
        for (int z = 1; z < CLUSTER_K; ++z) {
            const float4 v = load_peer(p, z);
            sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
        }
        const int r = row0 + rr, c = col0 + cc;
        if (r >= M) continue;
        float *dst = C + (size_t)r * N + c;
        if (vecB && c + 4 <= N) {
            *reinterpret_cast<float4 *>(dst) = sum;
        } else {
#pragma unroll
            for (int x = 0; x < 4; ++x)
                if (c + x < N) dst[x] = comp(sum, x);
        }
    }
    cluster_sync();  // no block leaves (freeing its shared memory) while another still reads it
#else
    // One slice: C itself; several: this slice's plane of the workspace.
    store_rows<0, 8>(gridDim.z == 1 ? C : W + blockIdx.z * (size_t)M * N, acc, M, N, r0, c0, vecB);
#endif
}

// mm_sum_slices adds the split-K slices of a product up, in slice order (the same sum every run):
// C[i] = W[i] + W[n + i] + ... + W[(S-1) n + i], a grid-stride loop over the n outputs.
extern "C" __global__ void mm_sum_slices(const float *__restrict__ W, float *__restrict__ C, long long n, int S) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        float sum = 0.0f;
        for (int z = 0; z < S; ++z) sum += W[(size_t)z * n + i];
        C[i] = sum;
    }
}

// mm_copy_rows copies a rows x cols matrix whose rows are ldsrc floats apart into one whose rows are
// dstCols floats (dstCols >= cols: the extra columns are zeros). Multiply pads a large product's
// unaligned A and B this way, so that the tiles are copied 16 bytes at a time, and copies the padded C
// back (dstCols = cols): three passes over memory that cost a few percent of the product.
extern "C" __global__ void mm_copy_rows(const float *__restrict__ src, float *__restrict__ dst, int rows, int cols, int ldsrc,
                                        int dstCols) {
    const long long n = (long long)rows * dstCols;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const int r = (int)(i / dstCols), c = (int)(i % dstCols);
        dst[i] = c < cols ? src[(size_t)r * ldsrc + c] : 0.0f;
    }
}

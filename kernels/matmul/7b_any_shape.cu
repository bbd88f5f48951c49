// Step 7b, any shape: step 7 with predicated edge tiles, what Multiply runs on a shape off the tiles.
//
// What changed from step 7:
// 1. The grid covers M and N with ceil(M/128) x ceil(N/128) blocks and the k loop runs ceil(K/16)
//    tiles, so the last block row and column and the last k tile hang past the matrices' edges.
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
// 5. Split K. A product of few tiles (255^3 is 4 blocks for 132 SMs; 513 x 129 x 1025 is 10 blocks
//    of 65 k tiles each) would leave most of the GPU idle, so the plan cuts K into S slices, one per
//    blockIdx.z, enough for about two blocks per SM; each slice writes its partial product to a
//    workspace, and mm_sum_slices adds the S partials up, in order, into C.
// 6. Padding. On a large product whose rows are not aligned (4095^3), single-float copies cost a
//    third of the speed, so Multiply first copies A and B into buffers whose rows are a multiple of 4
//    floats, zero-padded (mm_copy_rows), runs the aligned product, and copies C back: the extra passes
//    are a few percent of the product's time.
//
// Why: step 3, the only step that took any shape before, runs at a sixth of step 7's rate; the edge
// costs here are a few comparisons per load and store, while the 4096 FMAs a thread does per k tile
// are step 7's.
//
// Launch: block 256; grid (ceil(N/128), ceil(M/128), S), kTiles = ceil(ceil(K/16) / S); then, when
// S > 1, mm_sum_slices over the M * N outputs. Limits: any M, N, K >= 1; A, B, C 16-byte aligned
// (their rows need not be).
// Needs: compute capability 8.0 (cp.async).
#define BM 128
#define BN 128
#define BK 16
#define SA (BK + 4)

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

__device__ __forceinline__ float comp(const float4 &v, int c) { return c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w; }

// blockIdx.z is the slice of K the block sums: k tiles [z * kTiles, (z + 1) * kTiles), written to
// C + z * M * N (with one slice, C itself; with several, a workspace that mm_sum_slices adds up).
extern "C" __global__ void __launch_bounds__(256) mm_warptile_any(const float *__restrict__ A, const float *__restrict__ B,
                                                                  float *__restrict__ C, int M, int N, int K, int kTiles) {
    __shared__ __align__(16) float As[2][BM * SA];
    __shared__ __align__(16) float Bs[2][BK * BN];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;
    const int lm = lane & 7, ln = lane >> 3;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const bool vecA = (K & 3) == 0, vecB = (N & 3) == 0;

    auto load = [&](int stage, int k0) {
        if (vecA) {  // A: 128 rows x 4 chunks of 4 k, 16 bytes each (a chunk is wholly in or out)
#pragma unroll
            for (int l = 0; l < 2; ++l) {
                const int i = tid + 256 * l, r = i >> 2, c = (i & 3) * 4;
                const int gr = row0 + r, gk = k0 + c;
                const bool ok = gr < M && gk < K;
                cp_async16z(&As[stage][r * SA + c], ok ? A + (size_t)gr * K + gk : A, ok);
            }
        } else {  // one float each: 16 consecutive k of a row per half-warp (coalesced, few conflicts)
#pragma unroll
            for (int l = 0; l < 8; ++l) {
                const int i = tid + 256 * l, r = i >> 4, c = i & 15;
                const int gr = row0 + r, gk = k0 + c;
                const bool ok = gr < M && gk < K;
                cp_async4(&As[stage][r * SA + c], ok ? A + (size_t)gr * K + gk : A, ok);
            }
        }
        if (vecB) {  // B: 16 rows of k x 32 chunks of 4 columns
#pragma unroll
            for (int l = 0; l < 2; ++l) {
                const int i = tid + 256 * l, r = i >> 5, c = (i & 31) * 4;
                const int gk = k0 + r, gc = col0 + c;
                const bool ok = gk < K && gc < N;
                cp_async16z(&Bs[stage][r * BN + c], ok ? B + (size_t)gk * N + gc : B, ok);
            }
        } else {  // one float each: a warp copies 32 consecutive columns of a row
#pragma unroll
            for (int l = 0; l < 8; ++l) {
                const int i = tid + 256 * l, r = i >> 7, c = i & 127;
                const int gk = k0 + r, gc = col0 + c;
                const bool ok = gk < K && gc < N;
                cp_async4(&Bs[stage][r * BN + c], ok ? B + (size_t)gk * N + gc : B, ok);
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    };

    float acc[8][8] = {{0.0f}};
    const int kBase = blockIdx.z * kTiles * BK;
    const int tiles = min(kTiles, (K - kBase + BK - 1) / BK);
    C += (size_t)blockIdx.z * M * N;
    load(0, kBase);
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
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int r = row0 + wm + lm + 8 * i;
        if (r >= M) continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int c = col0 + wn + 16 * h + 4 * ln;
            float *dst = C + (size_t)r * N + c;
            const float4 v = make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
            if (vecB && c + 4 <= N) {
                *reinterpret_cast<float4 *>(dst) = v;
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    if (c + e < N) dst[e] = comp(v, e);
            }
        }
    }
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

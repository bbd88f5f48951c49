// Step 9, the article's split: float32 accuracy from 16-bit tensor cores, three products per tile.
//
// What changed from step 8: every float32 input x is split ONCE, before the product, by the
// element-wise kernel mm_split_halves into two 16-bit numbers, hi = round(x) and
// lo = round((x - hi) * LO_SCALE), and the product kernel mm_split multiplies the 16-bit matrices
// on the tensor cores with mma.sync m16n8k16 (twice the rate of TF32's m16n8k8, and half the bytes
// per element through shared memory):
//     A B ~= Ahi Bhi + (Ahi Blo + Alo Bhi) / LO_SCALE        (the small Alo Blo is dropped)
// Ahi Bhi is summed in one set of float32 accumulators and the two correction products in another,
// added at the end with one scaling: the correction terms are 2^-11 smaller, and a separate
// accumulator keeps their bits. With -DACC2 each 32-deep k tile of Ahi Bhi is summed into fresh
// registers and then added to the total with ordinary float32 adds, which round: the tensor core's
// own accumulation truncates, and over K = 4096 that bias dominates the error of a split product.
// The lesson's step 9 is built with -DACC2; the variant without it is measured beside it.
//
// The 16-bit format is a build option (the lesson measures all three and explains its choice):
//   * default, FP16 (the article's): 11-bit significands, so hi + lo holds 22 bits of x. lo is scaled
//     by 2^11 so that it stays a normal number: unscaled, lo of a small x would be subnormal in fp16
//     and lose its bits. Limit: |x| < 65504 (fp16's largest), or hi overflows to infinity.
//   * -DUSE_BF16: bfloat16, float32's exponent range (no overflow, no scaling) but 8-bit
//     significands: hi + lo holds only 16 bits of x, about 1e-5 relative error, short of float32.
//   * -DHI_ONLY: only Ahi Bhi, a plain fp16 product: 1e-3-level error. The lesson uses it as the
//     "wrong kernel" that KernelBench's 1e-2 tolerance lets through.
// (The 3xTF32 split is step 8 built with -DSPLIT3.)
//
// mm_split: block 256 (8 warps, each a 64 x 32 tile of C as 4 x 4 m16n8 tiles), block tile 128 x 128,
// BK = 32, a 3-stage cp.async pipeline. A fragments are loaded with ldmatrix.x4 from Ahi/Alo[m][k]
// (rows of 40 halves = 80 bytes: 8 rows fall in 8 different 16-byte groups, conflict-free) and B
// fragments with ldmatrix.x4.trans from Bhi/Blo[k][n] (rows of 136 halves = 272 bytes, same).
// Dynamic shared memory: STAGES x 37,888 bytes (3 stages, 111 KiB, by default; the lesson builds it
// with -DSTAGES=2, 74 KiB, on GPUs whose blocks get at most 99 KiB: compute capability 8.6 and 8.9).
// Limits: M % 128 == 0, N % 128 == 0, K % 32 == 0, 16-byte aligned buffers, compute capability 8.0+.
// Needs: compute capability 8.0 (cp.async and mma.sync m16n8k16 with fp16 and bf16).
// mm_split_halves: any n; grid-stride, block 256.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#ifdef USE_BF16
typedef __nv_bfloat16 half_t;
#define TO_HALF(x) __float2bfloat16_rn(x)
#define TO_FLOAT(h) __bfloat162float(h)
#define MMA_TYPE "bf16"
#define LO_SCALE 1.0f
#else
typedef __half half_t;
#define TO_HALF(x) __float2half_rn(x)
#define TO_FLOAT(h) __half2float(h)
#define MMA_TYPE "f16"
#define LO_SCALE 2048.0f
#endif

extern "C" __global__ void mm_split_halves(const float *__restrict__ x, half_t *__restrict__ hi, half_t *__restrict__ lo,
                                           long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const float v = x[i];
        const half_t h = TO_HALF(v);
        hi[i] = h;
        lo[i] = TO_HALF((v - TO_FLOAT(h)) * LO_SCALE);
    }
}

#ifndef STAGES
#define STAGES 3
#endif
#define BM 128
#define BN 128
#define BK 32
#define SA (BK + 8)   // halves per A row in shared memory
#define SB (BN + 8)   // halves per B row
#define STAGE_HALVES (2 * BM * SA + 2 * BK * SB)

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void cp_async16(void *dst, const void *src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(dst)), "l"(src) : "memory");
}

__device__ __forceinline__ void ldsm4(unsigned (&r)[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
}

__device__ __forceinline__ void ldsm4t(unsigned (&r)[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
}

__device__ __forceinline__ void mma16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32." MMA_TYPE "." MMA_TYPE ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

extern "C" __global__ void __launch_bounds__(256) mm_split(const half_t *__restrict__ Ahi, const half_t *__restrict__ Alo,
                                         const half_t *__restrict__ Bhi, const half_t *__restrict__ Blo,
                                         float *__restrict__ C, int M, int N, int K) {
    extern __shared__ __align__(16) half_t sh[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;
    const int g = lane >> 2, t = lane & 3;
    const size_t aoff = (size_t)blockIdx.y * BM * K, boff = (size_t)blockIdx.x * BN;

    auto load = [&](int stage, int k0) {
        half_t *ah = sh + stage * STAGE_HALVES, *al = ah + BM * SA, *bh = al + BM * SA, *bl = bh + BK * SB;
#pragma unroll
        for (int l = 0; l < 2; ++l) {  // A: 128 rows x 4 chunks of 8 halves
            const int i = tid + 256 * l, r = i >> 2, c = (i & 3) * 8;
            const size_t src = aoff + (size_t)r * K + k0 + c;
            cp_async16(ah + r * SA + c, Ahi + src);
#ifndef HI_ONLY
            cp_async16(al + r * SA + c, Alo + src);
#endif
        }
#pragma unroll
        for (int l = 0; l < 2; ++l) {  // B: 32 rows x 16 chunks
            const int i = tid + 256 * l, r = i >> 4, c = (i & 15) * 8;
            const size_t src = boff + (size_t)(k0 + r) * N + c;
            cp_async16(bh + r * SB + c, Bhi + src);
#ifndef HI_ONLY
            cp_async16(bl + r * SB + c, Blo + src);
#endif
        }
    };

    float acc[4][4][4], cor[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = cor[i][j][e] = 0.0f;

    const int tiles = K / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) load(s, s * BK);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    // ldmatrix lane addresses. A (x4): matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7,
    // k 8-15), (rows 8-15, k 8-15) = the m16n8k16 fragment a0..a3. B (x4.trans): matrices (k 0-7,
    // n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15) = b0, b1 of two n8 tiles.
    const int a_row = wm + (lane & 7) + ((lane >> 3) & 1) * 8, a_col = (lane >> 4) * 8;
    const int b_row = (lane & 7) + ((lane >> 3) & 1) * 8, b_col = wn + (lane >> 4) * 8;
    for (int kt = 0; kt < tiles; ++kt) {
        asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2) : "memory");
        __syncthreads();
        if (kt + STAGES - 1 < tiles) load((kt + STAGES - 1) % STAGES, (kt + STAGES - 1) * BK);
        asm volatile("cp.async.commit_group;" ::: "memory");
        const half_t *ah = sh + (kt % STAGES) * STAGE_HALVES, *al = ah + BM * SA, *bh = al + BM * SA, *bl = bh + BK * SB;
#ifdef ACC2
        float part[4][4][4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) part[i][j][e] = 0.0f;
#else
#define part acc
#endif
#pragma unroll
        for (int ks = 0; ks < BK; ks += 16) {
            unsigned bhf[4][2], blf[4][2];
#pragma unroll
            for (int p = 0; p < 2; ++p) {
                unsigned r[4];
                ldsm4t(r, bh + (ks + b_row) * SB + b_col + 16 * p);
                bhf[2 * p][0] = r[0], bhf[2 * p][1] = r[1], bhf[2 * p + 1][0] = r[2], bhf[2 * p + 1][1] = r[3];
#ifndef HI_ONLY
                ldsm4t(r, bl + (ks + b_row) * SB + b_col + 16 * p);
                blf[2 * p][0] = r[0], blf[2 * p][1] = r[1], blf[2 * p + 1][0] = r[2], blf[2 * p + 1][1] = r[3];
#endif
            }
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                unsigned ahf[4];
                ldsm4(ahf, ah + (a_row + 16 * i) * SA + ks + a_col);
#ifndef HI_ONLY
                unsigned alf[4];
                ldsm4(alf, al + (a_row + 16 * i) * SA + ks + a_col);
                // Three passes over j, so that the products into one accumulator are 4 apart:
                // back-to-back products into the same registers would wait for each other.
#pragma unroll
                for (int j = 0; j < 4; ++j) mma16(cor[i][j], alf, bhf[j][0], bhf[j][1]);
#endif
#pragma unroll
                for (int j = 0; j < 4; ++j) mma16(part[i][j], ahf, bhf[j][0], bhf[j][1]);
#ifndef HI_ONLY
#pragma unroll
                for (int j = 0; j < 4; ++j) mma16(cor[i][j], ahf, blf[j][0], blf[j][1]);
#endif
            }
        }
#ifdef ACC2
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[i][j][e] += part[i][j][e];
#else
#undef part
#endif
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    const float inv = 1.0f / LO_SCALE;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int r = blockIdx.y * BM + wm + 16 * i + g, c = blockIdx.x * BN + wn + 8 * j + 2 * t;
            *reinterpret_cast<float2 *>(C + (size_t)r * N + c) =
                make_float2(acc[i][j][0] + cor[i][j][0] * inv, acc[i][j][1] + cor[i][j][1] * inv);
            *reinterpret_cast<float2 *>(C + (size_t)(r + 8) * N + c) =
                make_float2(acc[i][j][2] + cor[i][j][2] * inv, acc[i][j][3] + cor[i][j][3] * inv);
        }
}

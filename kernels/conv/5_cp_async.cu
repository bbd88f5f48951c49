// Step 5, the tensor-core implicit GEMM pipelined with cp.async: a ring of buffers, two tiles in flight (sm_80+).
//
// What changed from step 4: in step 4 each thread loads its share of a tile into registers, stores
// it to shared memory, and only then can the warps multiply: the tensor cores wait for the gather,
// and the gather waits for the tensor cores. Here the tile is copied straight from global to
// shared memory with cp.async (no registers on the way) into a ring of buffers: while the warps
// multiply tile t, the copies of the next tiles are in flight into the others, and one barrier per
// tile separates them. With -DSTAGES=2 it is the classic double buffer (tile t + 1 in flight); the
// default, 3 buffers, keeps two tiles in flight, which hides the gather's latency better (0.59 ms
// -> 0.45 ms at AlexNet's layer in TF32 on an H100; 4 buffers no longer fit two blocks per SM).
// __launch_bounds__(256, 2) caps the registers at 128 so that two blocks share an SM: left alone,
// the compiler takes 208 for the TF32 kernel and one block sits alone on its SM, 30% slower.
// cp.async's zero-fill form does the padding for free: a tap outside the input copies 0 bytes from
// the source and fills the 4 bytes of shared memory with zeros, so there is no branch on the
// copy, only on its size. The copies are 4 bytes each (a gather: neighbouring taps of a pixel are
// not contiguous in memory for stride 4); the weights could go 16 bytes at a time when Kg % 4 == 0,
// which AlexNet's 363 taps are not.
//
// TF32 (conv_cpasync_tf32) and FP16 (conv_cpasync_fp16) as in step 4, with the same rounding and
// the same tile: 128 pixels x 96 channels x 32 taps, 8 warps of 32 x 48.
//
// Launch: 256 threads; grid (ceil(M/128), ceil(K/96)); dynamic shared memory: STAGES tiles
// (STAGES x (32 x (128 + pad) + 32 x (96 + pad)) floats) and the tap table (8 bytes per tap, Kg
// rounded up to 32). Limits: Kg = C*R*R <= 4096, sides < 8192, compute capability 8.0+.
// Build EPILOGUE2 (KernelBench's level-2 conv + ReLU + bias): two more arguments after OW, bias2 and
// relu, and the store writes max(conv + bias, 0) + bias2[k], no second pass over y.
// Needs: compute capability 8.0 (cp.async and mma.sync with TF32).
#include <cuda_fp16.h>
#define BM 128
#define BN 96
#define BK 32
#define NOTAP 0x7FFF7FFF
#ifndef MINB
#define MINB 2  // blocks per SM the compiler must fit: at most 128 registers per thread
#endif
#ifndef STAGES
#define STAGES 3
#endif

__device__ __forceinline__ unsigned tf32(float v) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

// Copies 4 bytes from src to shared dst, or writes 4 zero bytes when ok is false (src is not read).
__device__ __forceinline__ void cp_async4(float *dst, const float *src, bool ok) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(smem_u32(dst)), "l"(src), "r"(ok ? 4 : 0) : "memory");
}

__device__ __forceinline__ unsigned h2(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned *>(&h);
}

// EPILOGUE2 (a build for KernelBench's conv + ReLU + bias, level 2 problem 1): the kernel takes
// bias2 and relu after OW and writes max(v, 0) (relu set) + bias2[k] (bias2 not null) where v is
// conv + bias, in the same pass over y.
#ifdef EPILOGUE2
#define EPILOGUE_PARAMS , const float *__restrict__ bias2, int relu
#define EPILOGUE_ARGS , bias2, relu
#define EPILOGUE(v, k) (((relu) ? fmaxf((v), 0.f) : (v)) + (bias2 != nullptr ? bias2[k] : 0.f))
#else
#define EPILOGUE_PARAMS
#define EPILOGUE_ARGS
#define EPILOGUE(v, k) (v)
#endif

template <bool HALF>
__device__ __forceinline__ void conv_tc(const float *__restrict__ x, const float *__restrict__ w,
                                        const float *__restrict__ bias, float *__restrict__ y, int N, int C, int H,
                                        int W, int K, int R, int S, int P, int OH, int OW EPILOGUE_PARAMS) {
    constexpr int SA = BM + (HALF ? 4 : 8), SB = BN + (HALF ? 4 : 8);
    extern __shared__ __align__(16) float smem[];
    constexpr int STAGE = BK * SA + BK * SB;  // floats per buffer
    int2 *ktab = reinterpret_cast<int2 *>(smem + STAGES * STAGE);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t4 = lane & 3;
    const int wm = (warp >> 1) * 32, wn = (warp & 1) * 48;
    const int Kg = C * R * R, tiles = (Kg + BK - 1) / BK;
    for (int q = tid; q < tiles * BK; q += 256) {
        if (q < Kg) {
            const int c = q / (R * R), rs = q % (R * R), r = rs / R, s = rs % R;
            ktab[q] = make_int2(c * H * W + r * W + s, (r << 16) | s);
        } else {
            ktab[q] = make_int2(0, NOTAP);
        }
    }
    const int OHW = OH * OW;
    const long long M = (long long)N * OHW;
    const int m = tid & (BM - 1), q0 = tid >> 7;
    const long long p = (long long)blockIdx.x * BM + m;
    int ih0 = -65536, iw0 = -65536;
    long long base = 0;
    if (p < M) {
        const long long n = p / OHW;
        const int rem = (int)(p % OHW), oh = rem / OW, ow = rem % OW;
        ih0 = oh * S - P;
        iw0 = ow * S - P;
        base = n * C * H * W + (long long)ih0 * W + iw0;
    }
    const int k0 = blockIdx.y * BN;
    __syncthreads();

    float acc[2][6][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 6; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

    auto load = [&](int t, int stage) {
        float *as = smem + stage * STAGE, *bs = as + BK * SA;
#pragma unroll
        for (int l = 0; l < 16; ++l) {  // A: 32 taps x 128 pixels, this thread's pixel m
            const int2 e = ktab[t * BK + q0 + 2 * l];
            const int ih = ih0 + (e.y >> 16), iw = iw0 + (e.y & 0xFFFF);
            const bool ok = (unsigned)ih < (unsigned)H && (unsigned)iw < (unsigned)W;
            cp_async4(as + (q0 + 2 * l) * SA + m, ok ? x + base + e.x : x, ok);
        }
#pragma unroll
        for (int l = 0; l < 12; ++l) {  // B: 32 taps x 96 channels
            const int i = tid + 256 * l, q = t * BK + i / BN, k = k0 + i % BN;
            const bool ok = q < Kg && k < K;
            cp_async4(bs + (i / BN) * SB + i % BN, ok ? w + (long long)k * Kg + q : w, ok);
        }
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {  // fill the pipeline
        if (s < tiles) load(s, s);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    for (int t = 0; t < tiles; ++t) {
        asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2) : "memory");
        __syncthreads();  // tile t has landed for every thread, and tile t-1's buffer is free
        if (t + STAGES - 1 < tiles) load(t + STAGES - 1, (t + STAGES - 1) % STAGES);  // in flight meanwhile
        asm volatile("cp.async.commit_group;" ::: "memory");
        const float *As = smem + (t % STAGES) * STAGE, *Bs = As + BK * SA;
        if (HALF) {
#pragma unroll
            for (int ks = 0; ks < BK; ks += 16) {
                unsigned a[2][4], b[6][2];
#pragma unroll
                for (int i = 0; i < 2; ++i) {
                    const int r0 = wm + 16 * i + g;
                    const float *c0 = As + (ks + 2 * t4) * SA, *c8 = As + (ks + 2 * t4 + 8) * SA;
                    a[i][0] = h2(c0[r0], c0[SA + r0]);
                    a[i][1] = h2(c0[r0 + 8], c0[SA + r0 + 8]);
                    a[i][2] = h2(c8[r0], c8[SA + r0]);
                    a[i][3] = h2(c8[r0 + 8], c8[SA + r0 + 8]);
                }
#pragma unroll
                for (int j = 0; j < 6; ++j) {
                    const int n0 = wn + 8 * j + g;
                    const float *c0 = Bs + (ks + 2 * t4) * SB, *c8 = Bs + (ks + 2 * t4 + 8) * SB;
                    b[j][0] = h2(c0[n0], c0[SB + n0]);
                    b[j][1] = h2(c8[n0], c8[SB + n0]);
                }
#pragma unroll
                for (int i = 0; i < 2; ++i)
#pragma unroll
                    for (int j = 0; j < 6; ++j)
                        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                            : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]), "+f"(acc[i][j][3])
                            : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]), "r"(b[j][0]), "r"(b[j][1]));
            }
        } else {
#pragma unroll
            for (int ks = 0; ks < BK; ks += 8) {
                unsigned a[2][4], b[6][2];
#pragma unroll
                for (int i = 0; i < 2; ++i) {
                    const int r0 = wm + 16 * i + g;
                    const float *c0 = As + (ks + t4) * SA, *c4 = As + (ks + t4 + 4) * SA;
                    a[i][0] = tf32(c0[r0]);
                    a[i][1] = tf32(c0[r0 + 8]);
                    a[i][2] = tf32(c4[r0]);
                    a[i][3] = tf32(c4[r0 + 8]);
                }
#pragma unroll
                for (int j = 0; j < 6; ++j) {
                    const int n0 = wn + 8 * j + g;
                    b[j][0] = tf32(Bs[(ks + t4) * SB + n0]);
                    b[j][1] = tf32(Bs[(ks + t4 + 4) * SB + n0]);
                }
#pragma unroll
                for (int i = 0; i < 2; ++i)
#pragma unroll
                    for (int j = 0; j < 6; ++j)
                        asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                            : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]), "+f"(acc[i][j][3])
                            : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]), "r"(b[j][0]), "r"(b[j][1]));
            }
        }
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    // Accumulator (i, j): c0, c1 at (row g, channels 2t, 2t+1), c2, c3 at row g + 8.
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const long long pp = (long long)blockIdx.x * BM + wm + 16 * i + g + 8 * h;
            if (pp >= M) continue;
            const long long n = pp / OHW;
            const int rem = (int)(pp % OHW);
#pragma unroll
            for (int j = 0; j < 6; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int k = k0 + wn + 8 * j + 2 * t4 + e;
                    if (k < K) y[(n * K + k) * OHW + rem] = EPILOGUE(acc[i][j][2 * h + e] + bias[k], k);
                }
        }
}

extern "C" __global__ void __launch_bounds__(256, MINB) conv_cpasync_tf32(const float *__restrict__ x, const float *__restrict__ w,
                                                               const float *__restrict__ bias, float *__restrict__ y, int N,
                                                               int C, int H, int W, int K, int R, int S, int P, int OH, int OW EPILOGUE_PARAMS) {
    conv_tc<false>(x, w, bias, y, N, C, H, W, K, R, S, P, OH, OW EPILOGUE_ARGS);
}

extern "C" __global__ void __launch_bounds__(256, MINB) conv_cpasync_fp16(const float *__restrict__ x, const float *__restrict__ w,
                                                               const float *__restrict__ bias, float *__restrict__ y, int N,
                                                               int C, int H, int W, int K, int R, int S, int P, int OH, int OW EPILOGUE_PARAMS) {
    conv_tc<true>(x, w, bias, y, N, C, H, W, K, R, S, P, OH, OW EPILOGUE_ARGS);
}

// Step 7, conv + bias + ReLU + max pool fused with the pool in the epilogue: no atomics.
//
// What changed from step 6: a block no longer takes 128 consecutive pixels of the flattened
// output; it takes a TPH x TPW tile of POOL outputs of one image and computes the conv pixels those
// windows cover, a (2*TPH + 1) x (2*TPW + 1) region (at most 128 pixels, the GEMM tile's rows).
// After the product the block writes bias + ReLU of its region into shared memory (reusing the
// pipeline's buffers), synchronises, and each thread takes the 3 x 3 max of whole windows and
// stores the pooled value once: no atomics, no memset, no order-of-bits trick, so it works with or
// without the ReLU and for any sign. The price is recomputation: windows overlap by one conv row and
// column, so neighbouring tiles both compute their shared border, (2TPH+1)(2TPW+1) conv pixels for
// 4*TPH*TPW fresh ones, and a region smaller than 128 rows leaves tensor-core rows idle. The plan
// picks the tile that computes the fewest rows in all (for AlexNet's 27 x 27 pool: 4 x 6, regions of
// 9 x 13 = 117 pixels).
//
// Launch: 256 threads; grid (ceil(PH/TPH) * ceil(PW/TPW), ceil(K/96), N); dynamic shared memory as
// step 5's (the 96 x 129-float epilogue tile fits in any two of the pipeline buffers). Arguments: step 6's
// and TPH, TPW. Limits: step 5's, OH, OW >= 3, (2TPH+1)(2TPW+1) <= 128, N <= 65535.
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

template <bool HALF>
__device__ __forceinline__ void conv_tc(const float *__restrict__ x, const float *__restrict__ w,
                                        const float *__restrict__ bias, float *__restrict__ pool, int N, int C, int H,
                                        int W, int K, int R, int S, int P, int OH, int OW, int PH, int PW, int TPH, int TPW) {
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
    // The block's pool tile and the conv region its windows cover; row m of A is region pixel m.
    const int CC = 2 * TPW + 1, CR = 2 * TPH + 1, tilesW = (PW + TPW - 1) / TPW;
    const int ph0 = (blockIdx.x / tilesW) * TPH, pw0 = (blockIdx.x % tilesW) * TPW;
    const int m = tid & (BM - 1), q0 = tid >> 7;
    const long long n = blockIdx.z;
    int ih0 = -65536, iw0 = -65536;
    long long base = 0;
    {
        const int oh = 2 * ph0 + m / CC, ow = 2 * pw0 + m % CC;
        if (m < CR * CC && oh < OH && ow < OW) {
            ih0 = oh * S - P;
            iw0 = ow * S - P;
            base = n * C * H * W + (long long)ih0 * W + iw0;
        }
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
    __syncthreads();  // every warp is done with the buffers
    // Bias and ReLU into a 96 x 128 tile in shared memory (the pipeline buffers are free now).
    constexpr int ST = BM + 1;
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int j = 0; j < 6; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int row = wm + 16 * i + g + 8 * h, col = wn + 8 * j + 2 * t4 + e;
                    const float b = k0 + col < K ? bias[k0 + col] : 0.f;
                    smem[col * ST + row] = fmaxf(acc[i][j][2 * h + e] + b, 0.f);
                }
    __syncthreads();
    // Each thread pools whole windows: channel kk, window (a, b) of the tile.
    for (int idx = tid; idx < BN * TPH * TPW; idx += 256) {
        const int kk = idx / (TPH * TPW), rem = idx % (TPH * TPW), a = rem / TPW, b = rem % TPW;
        const int ph = ph0 + a, pw = pw0 + b, k = k0 + kk;
        if (ph >= PH || pw >= PW || k >= K) continue;
        const float *v = smem + kk * ST + (2 * a) * CC + 2 * b;
        float mx = v[0];
#pragma unroll
        for (int r = 0; r < 3; ++r)
#pragma unroll
            for (int c = 0; c < 3; ++c) mx = fmaxf(mx, v[r * CC + c]);
        pool[((n * K + k) * PH + ph) * PW + pw] = mx;
    }
}

extern "C" __global__ void __launch_bounds__(256, MINB) conv_pool_tile(const float *__restrict__ x, const float *__restrict__ w,
                                                                 const float *__restrict__ bias, float *__restrict__ pool, int N,
                                                                 int C, int H, int W, int K, int R, int S, int P, int OH, int OW,
                                                                 int PH, int PW, int TPH, int TPW) {
    conv_tc<false>(x, w, bias, pool, N, C, H, W, K, R, S, P, OH, OW, PH, PW, TPH, TPW);
}

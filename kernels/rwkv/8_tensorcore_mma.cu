// Step 8, tensor cores through mma.sync PTX (ours). Same product as v6, per channel c and 32 batch
// rows: OUT (32 x T) = eps + K (32 x T) x W (T x T), W[u][t] = w[c][(T-1)-(t-u)] for u <= t, else 0,
// in TF32 (inputs rounded to nearest with cvt.rna.tf32.f32, float32 accumulation). What changed from
// v6, and why:
//
// 1. mma.sync.m16n8k8 instead of WMMA. With the PTX instruction we know which element each lane holds,
//    so the Toeplitz operand needs no skewed 8-row array: lane (g = lane/4, q = lane%4) needs
//    W[u0+q][t+g] = wr[t-u0 + g-q] and W[u0+q+4][t+g] = wr[t-u0 + g-q-4] (wr = w row reversed, zero
//    below 0), two plain conflict-free loads from one reversed row. And it depends only on t-u0: the
//    fragment of column tile j at k-step s is the one of tile j-1 at step s-1. A warp computes a
//    32 (b) x 64 (t) tile (2 x 8 MMAs per k-step, 64 accumulators) and keeps the 16 W values of a step
//    in a register window that slides by two per k-step: 2 shared loads of W and 2 ldmatrix.x4 of K
//    (one A fragment each, 32-bit elements read as pairs of halves) feed 16 MMAs. v6 loaded 3 WMMA
//    fragments for 4 MMAs of twice the size.
// 2. The diagonal 64 x 64 block of each tile also skips its all-zero 8-column pieces (36 of 64 MMAs per
//    m-tile remain): the tensor cores do the triangle's work times about (1 + 36/T), 1.05 at T = 768.
// 3. Loading overlaps the products. A producer warp streams K into shared memory with cp.async in
//    64-column chunks, each landing on an mbarrier; it rounds each chunk to TF32 in place (once per
//    block, not once per warp) and releases it on a second mbarrier. The consumer warps start on chunk 0
//    while later chunks are in flight. Two blocks fit an SM (102 KB of shared memory at T = 768), so one
//    block's loads also overlap the other's products.
// 4. Balance: the 64-wide column tiles (tile n costs n + 1/2 chunks) go longest first to the least-loaded
//    of up to 6 warps. At T = 768 that is the mirrored pairs (n, 11-n), equal work per warp; at T = 1024
//    (16 tiles, one block an SM) the most a warp gets is 47 half-chunks, against 64 for whole pairs
//    over 4 warps.
//
// When T % 64 == 32 the tiles are 32 wide (a 32 x 32 warp tile, 8 MMAs per k-step), so T % 32 suffices.
// Launch: grid C * (B/32), block 32 * (nwc + 1) (nwc <= 6 consumer warps, one producer warp: the
// __launch_bounds__(224, 2) keep a thread at 128 registers so that two blocks fit an SM), dynamic shared
// memory 4*(32*(T+4) + 64 + T) + 16*(T/TW) bytes (TW = 64 when T % 64 == 0, else 32).
// Measured on the H100 at B=32, C=768, T=768: 0.095 ms (153 TFLOP/s of useful work; v6 0.37 ms, PyTorch
// 4.48 ms), rel L2 error 1.6e-5 against the float64 reference; at T=1024 0.185 ms (whole pairs: 0.198).
// What limits it (same run, T=768): with each MMA replaced by an FFMA the kernel still takes 0.086 ms,
// and with the K loads and out stores removed 0.072 ms. So the memory side (151 MB of K and out moved at
// about 1.7 TB/s, half the HBM peak: 256-byte row pieces, and a block's loads only overlap the other
// block's products) and the mma.sync TF32 rate (~200 TFLOP/s here) are both close to the total.
// Limits: B % 32 == 0, T % 32 == 0, compute capability 8.0 or newer, shared memory within the device's
// limit (T up to about 1700 on an H100; 768, the article's, needs 99.9 KiB: just over the 99 KiB a
// block of compute capability 8.6 and 8.9 gets).
// Needs: compute capability 8.0 (mma.sync with TF32, cp.async and mbarrier).

#define PADW 64  // zeros before the reversed w row: the W window reads down to t-u = -63
#define MAXC 6   // most consumer warps a block: with the producer 224 threads, two blocks an SM at 128 registers

__device__ __forceinline__ unsigned smem_addr(const void *p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ float tf32_rna(float x) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return __uint_as_float(r);
}

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_arrive(unsigned bar) {
    asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.shared.b64 st, [%0];\n}" ::"r"(bar) : "memory");
}

// mbar_wait spins until phase 0 of the barrier has completed (each barrier here completes once).
__device__ __forceinline__ void mbar_wait0(unsigned bar) {
    unsigned done;
    do {
        asm volatile(
            "{\n .reg .pred p;\n mbarrier.test_wait.parity.shared.b64 p, [%1], 0;\n selp.u32 %0, 1, 0, p;\n}"
            : "=r"(done)
            : "r"(bar)
            : "memory");
    } while (!done);
}

// ldsm4 loads one m16 x k8 TF32 A fragment: the four 8x4 (32-bit) sub-matrices whose row addresses
// lanes 0-7, 8-15, 16-23, 24-31 give land in a[0..3] as (row lane/4, column lane%4).
__device__ __forceinline__ void ldsm4(unsigned (&a)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                 : "r"(addr));
}

// mma8 is d += a (16x8, row) * b (8x8, col) in TF32 with float32 accumulation.
__device__ __forceinline__ void mma8(float (&d)[4], const unsigned (&a)[4], float b0, float b1) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(__float_as_uint(b0)), "r"(__float_as_uint(b1)));
}

// produce: the producer warp copies K (32 rows of channel c) into Ks chunk by chunk with cp.async
// (each chunk lands on landed[ch]), then rounds each chunk to TF32 in place and releases ready[ch].
template <int NJ>
__device__ __forceinline__ void produce(const float *__restrict__ k, float *Ks, unsigned landed, unsigned ready,
                                        int C, int T, int SK, int c, int b0) {
    constexpr int TW = 8 * NJ, F4 = TW / 4;  // chunk width (columns) and float4s per row of a chunk
    const int lane = threadIdx.x & 31, nch = T / TW;
    for (int ch = 0; ch < nch; ++ch) {
#pragma unroll
        for (int m = 0; m < F4; ++m) {  // 32 * F4 float4s per chunk, F4 per lane
            const int i = lane + 32 * m, row = i / F4, col = ch * TW + 4 * (i % F4);
            const float *src = k + ((size_t)(b0 + row) * C + c) * T + col;
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(Ks + row * SK + col)),
                         "l"(src)
                         : "memory");
        }
        asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" ::"r"(landed + 8 * ch) : "memory");
    }
    for (int ch = 0; ch < nch; ++ch) {
        mbar_wait0(landed + 8 * ch);
#pragma unroll
        for (int m = 0; m < F4; ++m) {
            const int i = lane + 32 * m, row = i / F4, col = ch * TW + 4 * (i % F4);
            float4 *p = reinterpret_cast<float4 *>(Ks + row * SK + col);
            float4 v = *p;
            v.x = tf32_rna(v.x), v.y = tf32_rna(v.y), v.z = tf32_rna(v.z), v.w = tf32_rna(v.w);
            *p = v;
        }
        mbar_arrive(ready + 8 * ch);
    }
}

// consume: a consumer warp computes its column tiles (TW = 8*NJ wide, all 32 batch rows).
template <int NJ>
__device__ __forceinline__ void consume(const float *Ks, const float *ws, unsigned ready, float *__restrict__ out,
                                        float eps, int C, int T, int SK, int c, int b0, int warp, int nwc) {
    constexpr int TW = 8 * NJ;
    const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
    const int NT = T / TW;
    // V(x) = pw[x] is the reversed w at t-u = x + g - q: the W element this lane needs at offset x.
    const float *pw = ws + PADW + g - q;
    // This lane's ldmatrix row: sub-matrix lane/8 is rows 8*((lane/8)&1).., columns 4*(lane/16)..
    const unsigned abase = smem_addr(Ks + ((lane & 7) + ((lane >> 3) & 1) * 8) * SK + (lane >> 4) * 4);
    const unsigned amt1 = 16 * SK * 4;  // bytes from rows 0-15 to rows 16-31
    int nready = 0;                     // chunks known to be ready
    // Column tiles go longest first to the least-loaded warp (ties to the lowest), tile n costing about
    // 2n+1 half-chunks. Every warp runs the same assignment and keeps its own tiles in a bit mask
    // (NT <= 64). When NT = 2 * nwc this is the mirrored pairs (n, NT-1-n); otherwise it is closer to
    // even than whole pairs would be.
    unsigned long long mine = 0;
    {
        int load[MAXC];
#pragma unroll
        for (int v = 0; v < MAXC; ++v) load[v] = 0;
        for (int n = NT - 1; n >= 0; --n) {
            int best = 0, bl = load[0];
#pragma unroll
            for (int v = 1; v < MAXC; ++v)
                if (v < nwc && load[v] < bl) best = v, bl = load[v];
#pragma unroll
            for (int v = 0; v < MAXC; ++v)
                if (v == best) load[v] += 2 * n + 1;
            if (best == warp) mine |= 1ull << n;
        }
    }
    for (int n = NT - 1; n >= 0; --n) {
        if (!((mine >> n) & 1)) continue;
        {
            const int tw = n * TW;  // the tile's first column t
            float acc[2][NJ][4];
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int j = 0; j < NJ; ++j)
#pragma unroll
                    for (int e = 0; e < 4; ++e) acc[i][j][e] = eps;
            // The window at k-step u0 (D = tw - u0): win[e] = V(D - 4 + 4e). Column tile j takes
            // b0 = W[u0+q][tw+8j+g] = V(D+8j) = win[2j+1] and b1 = W[u0+q+4][..] = V(D+8j-4) = win[2j].
            float win[2 * NJ];
#pragma unroll
            for (int e = 0; e < 2 * NJ; ++e) win[e] = pw[tw - 4 + 4 * e];
            // Whole chunks left of the diagonal block: every 8-column tile has non-zero W. Within a k-step
            // the m-tile 0 products run first, then the next step's m-tile 0 fragment is loaded while the
            // m-tile 1 products run (and likewise for m-tile 1): each ldmatrix has 8 MMAs to land behind.
            // Columns go j = NJ-1 .. 0, so the two window values loaded last are needed last.
            for (int ch = 0; ch < n; ++ch) {
                if (ch >= nready) {
                    mbar_wait0(ready + 8 * ch);
                    nready = ch + 1;
                }
                const unsigned ab = abase + 4 * ch * TW;
                unsigned a0[4], a1[4];
                ldsm4(a0, ab);
                ldsm4(a1, ab + amt1);
#pragma unroll
                for (int s = 0; s < NJ; ++s) {
                    const int D = tw - (ch * TW + 8 * s);
#pragma unroll
                    for (int j = NJ - 1; j >= 0; --j) mma8(acc[0][j], a0, win[2 * j + 1], win[2 * j]);
                    if (s + 1 < NJ) ldsm4(a0, ab + 32 * (s + 1));
#pragma unroll
                    for (int j = NJ - 1; j >= 0; --j) mma8(acc[1][j], a1, win[2 * j + 1], win[2 * j]);
                    if (s + 1 < NJ) ldsm4(a1, ab + amt1 + 32 * (s + 1));
#pragma unroll
                    for (int e = 2 * NJ - 1; e >= 2; --e) win[e] = win[e - 2];
                    win[1] = pw[D - 8];
                    win[0] = pw[D - 12];
                }
            }
            // The diagonal block (u0 = tw + 8s, D = -8s): column tiles j < s are all zero and skipped.
            if (n >= nready) {
                mbar_wait0(ready + 8 * n);
                nready = n + 1;
            }
            {
                const unsigned ab = abase + 4 * tw;
                unsigned a0[4], a1[4];
                ldsm4(a0, ab);
                ldsm4(a1, ab + amt1);
#pragma unroll
                for (int s = 0; s < NJ; ++s) {
#pragma unroll
                    for (int j = NJ - 1; j >= s; --j) mma8(acc[0][j], a0, win[2 * j + 1], win[2 * j]);
                    if (s + 1 < NJ) ldsm4(a0, ab + 32 * (s + 1));
#pragma unroll
                    for (int j = NJ - 1; j >= s; --j) mma8(acc[1][j], a1, win[2 * j + 1], win[2 * j]);
                    if (s + 1 < NJ) {
                        ldsm4(a1, ab + amt1 + 32 * (s + 1));
#pragma unroll
                        for (int e = 2 * NJ - 1; e >= 2; --e) win[e] = win[e - 2];
                        win[1] = pw[-8 * s - 8];
                        win[0] = pw[-8 * s - 12];
                    }
                }
            }
            // Accumulator (i, j): elements 0,1 at row g, columns 2q, 2q+1; elements 2,3 at row g+8.
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                const int b = b0 + 16 * i + g;
                float *o0 = out + ((size_t)b * C + c) * T + tw + 2 * q;
                float *o1 = out + ((size_t)(b + 8) * C + c) * T + tw + 2 * q;
#pragma unroll
                for (int j = 0; j < NJ; ++j) {
                    *reinterpret_cast<float2 *>(o0 + 8 * j) = make_float2(acc[i][j][0], acc[i][j][1]);
                    *reinterpret_cast<float2 *>(o1 + 8 * j) = make_float2(acc[i][j][2], acc[i][j][3]);
                }
            }
        }
    }
}

template <int NJ>
__device__ __forceinline__ void run(const float *__restrict__ w, const float *__restrict__ k, float *__restrict__ out,
                                    float eps, int C, int T) {
    extern __shared__ __align__(16) float smem[];
    constexpr int TW = 8 * NJ;
    const int SK = T + 4;  // K row stride: SK % 32 == 4, so the 8 rows of an ldmatrix sub-matrix hit 8 bank quads
    float *Ks = smem;                  // 32 rows of SK floats
    float *ws = Ks + 32 * SK;          // PADW zeros, then wr[d] = tf32(w[c][T-1-d]), d < T
    const unsigned landed = smem_addr(ws + PADW + T);  // T/TW mbarriers: chunk copied
    const int nch = T / TW;
    const unsigned ready = landed + 8 * nch;           // T/TW mbarriers: chunk rounded to TF32
    const int c = blockIdx.x % C;
    const int b0 = (blockIdx.x / C) * 32;
    const int nwc = (blockDim.x >> 5) - 1, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) {
        for (int ch = 0; ch < nch; ++ch) {
            mbar_init(landed + 8 * ch, 32);
            mbar_init(ready + 8 * ch, 32);
        }
    }
    for (int i = threadIdx.x; i < PADW + T; i += blockDim.x) {
        const int d = i - PADW;
        ws[i] = d >= 0 ? tf32_rna(w[(size_t)c * T + (T - 1) - d]) : 0.f;
    }
    __syncthreads();
    if (warp == nwc)
        produce<NJ>(k, Ks, landed, ready, C, T, SK, c, b0);
    else
        consume<NJ>(Ks, ws, ready, out, eps, C, T, SK, c, b0, warp, nwc);
}

extern "C" __global__ void __launch_bounds__(32 * (MAXC + 1), 2)
    rwkv_fwd_v8(const float *__restrict__ w, const float *__restrict__ k, float *__restrict__ out, float eps, int B, int C,
                int T) {
    if (T % 64 == 0)
        run<8>(w, k, out, eps, C, T);
    else
        run<4>(w, k, out, eps, C, T);
}

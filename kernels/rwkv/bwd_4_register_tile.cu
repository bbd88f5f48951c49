// Backward step 4, register tiles (ours, beyond the article). Steps 0-3 read two shared-memory values
// per multiply-add; the SM can do four times more FMAs per clock than shared memory can deliver
// words, so they are bound by shared memory. Here each lane keeps 32 outputs in registers and a
// sliding window of 32 taps in a register ring, so each step reads two values (one g, one new tap)
// for 32 FMAs.
//
//   dk[b][u] = sum_t g[b][t] * Wz[t-u],   Wz[v] = w[c][(T-1)-v] for 0 <= v < T, else 0
//   D[s]     = sum_b sum_t g[b][t] * kz[b][t-s],   dw[c][(T-1)-s] = D[s]   (kz = k, 0 outside [0,T))
//
// At step t a lane with outputs u0..u0+31 needs Wz[t-u0-i], i = 0..31: the window of step t-1 moved
// by one, plus Wz[t-u0]. The ring slot of Wz[v] is v mod 32, and the loop runs in blocks of 32 steps
// aligned with u0, so after full unrolling every slot index is a constant and the ring lives in
// registers. dw has the same structure with k's window (lags s0..s0+31) instead of w's.
//
// Layout: one block per (channel, 16 batch rows); lanes 0-15 and 16-31 take the same 16 rows (one
// per lane) and neighbouring tiles, so a g load is one conflict-free wavefront (rows have an odd
// stride) shared by both halves. Work is triangular (tile u0 sums T-u0 steps), so each half-warp
// takes tile p and then tile NT-1-p: the same T+64 steps for every lane (the fix the article
// announced). T is padded with zeros to a multiple of 128 in shared memory, so any T <= 1024 and any
// B work. dk goes out through a per-warp shared tile so that the stores are coalesced; dw's 16 rows
// are summed by a fixed shuffle tree and written as one partial per 16 rows, then reduced in order
// (deterministic, no atomics).
// Only real products are summed (what changed, and why): a padded zero times a real tap that is
// +-inf or NaN is NaN, where the exact gradient never meets that tap (an inf in w made dk[u] NaN for
// every u past it; an inf in k made dw NaN before it; an inf in g leaked into earlier dk and dw). So
// the steps past T are skipped (the loop ends at T; the block holding T stops at t = T), and in the
// two blocks a lane pair starts with, where the taps before the diagonal are padded zeros, g is
// selected (not multiplied) to 0 for the products that are not causal: one select per step there,
// chosen at compile time per (step, output), so the other blocks run the unchanged 32-FMA steps.
// Launch (each kernel): grid (C, ceil(B/16)), block Tp/4 with Tp = T rounded up to 128, dynamic shared
// memory as in the Go plan; then rwkv_bwd_reduce when B > 16. Limits: T <= 1024, shared memory.
#define TILE 32
#define ROWS 16
#define WPAD 32

// One block of TILE steps t = t0 .. t0+TILE-1: acc[i] += g[t] * ring[slot of tap t - o0 - i], where
// tl[t] is the tap of output (or lag) o0 at step t. MASK is for the blocks that meet padding: the
// head (t0 <= o0: taps before the diagonal are padded zeros, so g is selected to 0 there instead of
// multiplied, since 0 * inf would be NaN) and the tail (the block holding T: steps t >= T, where g
// is a padded zero, are skipped). Step q of output i is causal iff t0+q >= o0+i; with t0 and o0
// multiples of TILE that is t0 >= o0 for i <= q and t0 > o0 for i > q, so two selects per step do.
template <bool MASK>
__device__ __forceinline__ void ring_block(float (&acc)[TILE], float (&ring)[TILE], const float *tl,
                                           const float *gr, int t0, int o0, int T) {
    const bool lo = t0 >= o0, hi = t0 > o0;
#pragma unroll
    for (int q = 0; q < TILE; ++q) {
        if (MASK && t0 + q >= T) break;  // warp-uniform: the rest of the block is padding
        ring[q] = tl[t0 + q];
        const float gv = gr[t0 + q];
        const float glo = MASK ? (lo ? gv : 0.f) : gv;  // for outputs i <= q
        const float ghi = MASK ? (hi ? gv : 0.f) : gv;  // for outputs i > q
#pragma unroll
        for (int i = 0; i < TILE; ++i) acc[i] += (i <= q ? glo : ghi) * ring[(q - i) & (TILE - 1)];
    }
}

// The block loop of both kernels: blocks from tw (the lower tile of the lane pair) up to T; the first
// two and the one holding T are masked, the rest are plain.
__device__ __forceinline__ void ring_loop(float (&acc)[TILE], float (&ring)[TILE], const float *tl,
                                          const float *gr, int tw, int o0, int T) {
    for (int t0 = tw; t0 < T; t0 += TILE) {
        if (t0 >= tw + 2 * TILE && t0 + TILE <= T)
            ring_block<false>(acc, ring, tl, gr, t0, o0, T);
        else
            ring_block<true>(acc, ring, tl, gr, t0, o0, T);
    }
}

extern "C" __global__ void __launch_bounds__(256, 2)
rwkv_bwd_v4_dk(const float *__restrict__ w, const float *__restrict__ k, const float *__restrict__ g,
               float *__restrict__ dk, float *__restrict__ dwpart, int B, int C, int T, int Tp) {
    extern __shared__ float smem[];
    const int RS = Tp + 1;             // odd row stride: 16 rows at the same t fall in 16 banks
    float *sW = smem;                  // WPAD + Tp: sW[WPAD + v] = Wz[v]
    float *sG = sW + WPAD + Tp;        // ROWS x RS
    float *stage = sG + ROWS * RS;     // per warp 32 x 33, for coalesced stores
    const int c = blockIdx.x;
    const int b0 = blockIdx.y * ROWS;
    for (int i = threadIdx.x; i < WPAD + Tp; i += blockDim.x) {
        const int v = i - WPAD;
        sW[i] = (v >= 0 && v < T) ? w[c * T + (T - 1) - v] : 0.f;
    }
    for (int i = threadIdx.x; i < ROWS * Tp; i += blockDim.x) {
        const int r = i / Tp, t = i - r * Tp, b = b0 + r;
        sG[r * RS + t] = (t < T && b < B) ? g[(b * C + c) * T + t] : 0.f;
    }
    __syncthreads();

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int h = lane >> 4, r = lane & 15;
    const int NT = Tp / TILE;          // tiles of 32 outputs; warps = NT/4, pairs = NT/2
    const float *gr = sG + r * RS;
    float *st = stage + warp * (32 * 33);
    for (int ph = 0; ph < 2; ++ph) {
        const int tile = ph == 0 ? 2 * warp + h : NT - 1 - (2 * warp + h);
        const int u0 = tile * TILE;
        // the warp's two tiles are neighbours; it starts at the lower one (zeros before u0 for the other)
        const int tw = (ph == 0 ? 2 * warp : NT - 2 - 2 * warp) * TILE;
        float acc[TILE], ring[TILE];
#pragma unroll
        for (int i = 0; i < TILE; ++i) acc[i] = ring[i] = 0.f;
        const float *wl = sW + WPAD - u0;  // wl[t] = Wz[t - u0]
        ring_loop(acc, ring, wl, gr, tw, u0, T);
#pragma unroll
        for (int i = 0; i < TILE; ++i) st[lane * 33 + i] = acc[i];
        __syncwarp();
        for (int L = 0; L < 32; ++L) {  // lane L's row and tile, written 32 floats at a time
            const int bL = b0 + (L & 15);
            const int tL = ph == 0 ? 2 * warp + (L >> 4) : NT - 1 - (2 * warp + (L >> 4));
            const int u = tL * TILE + lane;
            if (bL < B && u < T) dk[(bL * C + c) * T + u] = st[L * 33 + lane];
        }
        __syncwarp();
    }
}

extern "C" __global__ void __launch_bounds__(256, 2)
rwkv_bwd_v4_dw(const float *__restrict__ w, const float *__restrict__ k, const float *__restrict__ g,
               float *__restrict__ dk, float *__restrict__ dwpart, int B, int C, int T, int Tp) {
    extern __shared__ float smem[];
    const int RS = Tp + 1;             // odd strides, as in rwkv_bwd_v4_dk
    const int RK = WPAD + Tp + 1;
    float *sG = smem;                  // ROWS x RS
    float *sK = sG + ROWS * RS;        // ROWS x RK: WPAD zeros, then kz[0..Tp)
    const int c = blockIdx.x;
    const int b0 = blockIdx.y * ROWS;
    for (int i = threadIdx.x; i < ROWS * Tp; i += blockDim.x) {
        const int r = i / Tp, t = i - r * Tp, b = b0 + r;
        const bool in = t < T && b < B;
        sG[r * RS + t] = in ? g[(b * C + c) * T + t] : 0.f;
        sK[r * RK + WPAD + t] = in ? k[(b * C + c) * T + t] : 0.f;
    }
    for (int i = threadIdx.x; i < ROWS * WPAD; i += blockDim.x) sK[(i / WPAD) * RK + (i % WPAD)] = 0.f;
    __syncthreads();

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int h = lane >> 4, r = lane & 15;
    const int NT = Tp / TILE;
    const float *gr = sG + r * RS;
    float *out = dwpart + (blockIdx.y * C + c) * T;  // this block's partial dw row
    for (int ph = 0; ph < 2; ++ph) {
        const int tile = ph == 0 ? 2 * warp + h : NT - 1 - (2 * warp + h);
        const int s0 = tile * TILE;    // lags s0 .. s0+31
        const int tw = (ph == 0 ? 2 * warp : NT - 2 - 2 * warp) * TILE;
        float acc[TILE], ring[TILE];
#pragma unroll
        for (int i = 0; i < TILE; ++i) acc[i] = ring[i] = 0.f;
        const float *kl = sK + r * RK + WPAD - s0;  // kl[t] = kz[t - s0]
        ring_loop(acc, ring, kl, gr, tw, s0, T);
        // sum the 16 rows of this half-warp: a fixed butterfly, the same order on every run
#pragma unroll
        for (int i = 0; i < TILE; ++i) {
            float v = acc[i];
            v += __shfl_xor_sync(0xffffffffu, v, 8);
            v += __shfl_xor_sync(0xffffffffu, v, 4);
            v += __shfl_xor_sync(0xffffffffu, v, 2);
            v += __shfl_xor_sync(0xffffffffu, v, 1);
            acc[i] = v;
        }
#pragma unroll
        for (int i = 0; i < TILE; ++i) {
            const int s = s0 + i;
            if ((i & 15) == r && s < T) out[(T - 1) - s] = acc[i];
        }
    }
}

// dw[i] = sum over the G partial slices part[p*n + i], in order: deterministic.
extern "C" __global__ void rwkv_bwd_reduce(const float *__restrict__ part, float *__restrict__ dw, int G, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.f;
    for (int p = 0; p < G; ++p) s += part[(long long)p * n + i];
    dw[i] = s;
}

// Step 5, register tiling with warps across the batch (ours, beyond the article). Two changes:
//
// 1. The lanes of a warp take 32 batch rows of one channel, all at the same t. Every lane then runs
//    exactly the same loop (no divergence at all), the w value it needs is the same for the whole
//    warp (a shared-memory broadcast), and each lane reads its own k row.
// 2. Each lane keeps TT = 16 consecutive outputs in registers (-DTT=8 or 32 compile the other tile
//    sizes the lesson measures to choose 16). Written as out[t] = sum_d w'[d] k[t-d]
//    with w' = w reversed, the k values of 16 outputs over 16 steps of d form a window of 32 values
//    that slides by 16: the lane loads 16 new k values (four float4s) and 16 w' values (four float4
//    broadcasts) per 256 FMAs, keeping the other 16 from the previous step (two register sets used
//    in turn, so nothing is copied). v3 issued a shared load for every 4 FMAs; here it is 1 for 32.
//
// Each warp also takes tiles in mirrored pairs (p, NT-1-p) so all warps do the same work (v4's idea).
// k rows sit in shared memory with TT zeros in front (so k[t-d] for t-d < 0 reads 0 and the diagonal
// needs no branch) and a row stride S with S % 32 == 4: eight lanes of a quarter-warp reading float4s
// at the same offset hit eight different groups of four banks, so the loads have no bank conflicts.
// The diagonal block (d0 = t0) sums only its causal products, d <= t (what changed, and why): its
// lower window is the zero padding in front of the row, and a padded zero times a w' value that is
// +-inf or NaN is NaN, so an inf in w made earlier outputs of the same tile NaN where the exact
// forward never meets it. The diagonal is one block per tile, with the mask fixed at compile time.
// Launch: grid C * ceil(B/32), block 256, dynamic shared 4*(Tpad + 32*S) bytes with Tpad = T rounded
// up to 16 and S the smallest S >= Tpad+16 with S % 32 == 4. Any B (missing rows read zeros and are
// not stored) and any T whose shared memory fits the device (T up to about 1700 on an H100; 768, the
// article's, needs 104 KiB: more than the 99 KiB a block of compute capability 8.6 and 8.9 gets, and
// the 64 KiB of 7.5).
#ifndef TT
#define TT 16
#endif
#define ROWS 32

// One block of TT steps of d: acc[i] += sum_j wd[j] * win[TT+i-j], win = lo ++ hi, where
// win[x] = k[t0 - d0 - TT + x] and wd = w' + d0.
__device__ __forceinline__ void tile_step(float (&acc)[TT], const float (&lo)[TT], const float (&hi)[TT],
                                          const float *wd) {
#pragma unroll
    for (int j4 = 0; j4 < TT; j4 += 4) {
        const float4 w4 = *reinterpret_cast<const float4 *>(wd + j4);
        const float wj[4] = {w4.x, w4.y, w4.z, w4.w};
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
#pragma unroll
            for (int i = 0; i < TT; ++i) {
                const int x = TT + i - (j4 + jj);
                acc[i] = fmaf(wj[jj], x >= TT ? hi[x - TT] : lo[x], acc[i]);
            }
        }
    }
}

// The diagonal block (d0 = t0): acc[i] += sum_{j<=i} wd[j] * up[i-j], up[x] = k[x]; the products
// with j > i would meet the zero padding in front of the row, which must not multiply w' (0 * inf).
__device__ __forceinline__ void tile_diag(float (&acc)[TT], const float (&up)[TT], const float *wd) {
#pragma unroll
    for (int j4 = 0; j4 < TT; j4 += 4) {
        const float4 w4 = *reinterpret_cast<const float4 *>(wd + j4);
        const float wj[4] = {w4.x, w4.y, w4.z, w4.w};
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
#pragma unroll
            for (int i = j4 + jj; i < TT; ++i) acc[i] = fmaf(wj[jj], up[i - (j4 + jj)], acc[i]);
        }
    }
}

__device__ __forceinline__ void load16(float (&v)[TT], const float *p) {
#pragma unroll
    for (int i = 0; i < TT; i += 4) {
        const float4 f = *reinterpret_cast<const float4 *>(p + i);
        v[i] = f.x; v[i + 1] = f.y; v[i + 2] = f.z; v[i + 3] = f.w;
    }
}

// tile computes out[b][c][t0 .. t0+TT-1] for this lane's row; kr[t] = k[b][c][t], zero outside [0,T).
__device__ __forceinline__ void tile(const float *wr, const float *kr, float *__restrict__ orow, float eps,
                                     int T, int t0, bool store) {
    float acc[TT], hi[TT], lo[TT];
#pragma unroll
    for (int i = 0; i < TT; ++i) acc[i] = eps;
    load16(hi, kr + t0);
    const int nb = t0 / TT;  // full blocks d0 = 0, TT, ..., t0 - TT, then the diagonal d0 = t0
    int d0 = 0;
    for (int m = 0; m + 1 < nb; m += 2) {
        load16(lo, kr + t0 - d0 - TT);
        tile_step(acc, lo, hi, wr + d0);
        d0 += TT;
        load16(hi, kr + t0 - d0 - TT);  // the old lo is the new hi: swap the roles, copy nothing
        tile_step(acc, hi, lo, wr + d0);
        d0 += TT;
    }
    if (nb & 1) {
        load16(lo, kr + t0 - d0 - TT);
        tile_step(acc, lo, hi, wr + d0);
        tile_diag(acc, lo, wr + d0 + TT);  // lo holds k[0 .. TT-1], the diagonal's window
    } else {
        tile_diag(acc, hi, wr + d0);
    }
    if (!store) return;
    if ((T & 3) == 0 && t0 + TT <= T) {
#pragma unroll
        for (int i = 0; i < TT; i += 4)
            *reinterpret_cast<float4 *>(orow + t0 + i) = make_float4(acc[i], acc[i + 1], acc[i + 2], acc[i + 3]);
    } else {
#pragma unroll
        for (int i = 0; i < TT; ++i)
            if (t0 + i < T) orow[t0 + i] = acc[i];
    }
}

extern "C" __global__ void __launch_bounds__(256) rwkv_fwd_v5(const float *__restrict__ w, const float *__restrict__ k,
                                                              float *__restrict__ out, float eps, int B, int C, int T,
                                                              int Tpad, int S) {
    extern __shared__ __align__(16) float smem[];
    float *wr = smem;         // Tpad floats: wr[d] = w[c][T-1-d], zero for d >= T
    float *ks = smem + Tpad;  // ROWS rows of S floats: TT zeros, k[b][c][0..T-1], zeros
    const int c = blockIdx.x % C;
    const int b0 = (blockIdx.x / C) * ROWS;
    for (int d = threadIdx.x; d < Tpad; d += blockDim.x) wr[d] = d < T ? w[c * T + (T - 1) - d] : 0.f;
    for (int r = 0; r < ROWS; ++r) {
        const int b = b0 + r;
        const float *src = k + ((size_t)b * C + c) * T;
        for (int p = threadIdx.x; p < S; p += blockDim.x) {
            const int t = p - TT;
            ks[r * S + p] = (b < B && t >= 0 && t < T) ? src[t] : 0.f;
        }
    }
    __syncthreads();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const int b = b0 + lane;
    const float *kr = ks + lane * S + TT;
    float *orow = out + ((size_t)b * C + c) * T;
    const int NT = Tpad / TT;
    for (int p = warp; p < (NT + 1) / 2; p += nw) {
        tile(wr, kr, orow, eps, T, p * TT, b < B);
        if (NT - 1 - p != p) tile(wr, kr, orow, eps, T, (NT - 1 - p) * TT, b < B);
    }
}

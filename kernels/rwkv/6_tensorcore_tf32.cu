// Step 6, tensor cores (ours, beyond the article). For one channel c the op is a matrix product:
//
//     out[b][t] = eps + sum_u K[b][u] * W[u][t],   W[u][t] = w[c][(T-1)-(t-u)] if u <= t, else 0
//
// W is upper triangular and Toeplitz (constant along diagonals: it depends on t-u only). So a block
// takes one channel and 32 batch rows and runs (32 x T) x (T x T) on the tensor cores with WMMA in
// TF32 (m16n16k8: 10-bit mantissa inputs, float32 accumulation), skipping the tiles of W that are
// all zero (u > t): that is half the product.
//
// W is never stored. Because it is Toeplitz, one 8-row "skewed" array M[r][x] = w'[x - r - PAD]
// (w' = w reversed, zero outside [0,T)) holds every 8 x 16 tile of W: the tile at rows u0.., columns
// t1.. is the 8 x 16 window of M starting at column PAD + t1 - u0, read with leading dimension L.
// All inputs are rounded to TF32 once, when they are staged in shared memory.
// Each warp computes a 32 x 32 output tile (2 x 2 accumulators; every fragment loaded feeds two MMAs)
// and takes the column tiles in mirrored pairs, so all warps do the same work. A W fragment serves the
// left half at one step and the right half two steps later (Toeplitz again), so each step loads two K
// fragments and one W fragment.
// Launch: grid C * (B/32), block 32 * nw (nw warps), dynamic shared 4*(32*(T+4) + 8*(T+PAD+8)) bytes.
// Limits: B % 32 == 0, T % 32 == 0, compute capability 8.0 or newer, shared memory within the device's
// limit (T up to 1440 on an H100; 768, the article's, needs 122 KiB: more than the 99 KiB a block of
// compute capability 8.6 and 8.9 gets).
// Needs: compute capability 8.0 (wmma with TF32: the tf32 fragments and __float_to_tf32).
#include <mma.h>
using namespace nvcuda;

#define PAD 32

extern "C" __global__ void rwkv_fwd_v6(const float *__restrict__ w, const float *__restrict__ k,
                                       float *__restrict__ out, float eps, int B, int C, int T) {
    extern __shared__ __align__(32) float smem[];
    // Row strides chosen for conflict-free fragment loads: an A fragment load reads 8 rows x 4
    // columns (SK % 32 == 4 puts them in 32 different banks), a B fragment load 4 rows x 8 columns
    // (L % 32 == 8 does). Fragment pointers stay 32-byte aligned: 16*SK and PAD+t-u0 are multiples of 8.
    const int SK = T + 4;        // row stride of K in shared memory
    const int L = T + PAD + 8;   // row length of M (T % 32 == 0, so L % 32 == 8)
    float *Ks = smem;            // 32 rows of SK floats: K[b0+r][u], TF32-rounded
    float *M = smem + 32 * SK;   // 8 rows of L floats
    const int c = blockIdx.x % C;
    const int b0 = (blockIdx.x / C) * 32;
    for (int r = 0; r < 32; ++r) {
        const float *src = k + ((size_t)(b0 + r) * C + c) * T;
        for (int u = threadIdx.x; u < T; u += blockDim.x) Ks[r * SK + u] = wmma::__float_to_tf32(src[u]);
    }
    for (int i = threadIdx.x; i < 8 * L; i += blockDim.x) {
        const int r = i / L, x = i - r * L;
        const int d = x - r - PAD;  // the t-u of this element
        M[i] = (d >= 0 && d < T) ? wmma::__float_to_tf32(w[c * T + (T - 1) - d]) : 0.f;
    }
    __syncthreads();

    const int warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const int NT = T / 32;  // 32-wide column tiles
    const size_t ldo = (size_t)C * T;  // out rows b and b+1 of channel c are C*T apart
    for (int p = warp; p < (NT + 1) / 2; p += nw) {
        for (int pass = 0; pass < 2; ++pass) {
            const int n = pass == 0 ? p : NT - 1 - p;
            if (pass == 1 && n == p) break;
            const int t0 = n * 32;
            wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[2][2];
            wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a[2];
            // W tiles are Toeplitz: the right half's tile at step u0 (offset t0+16-u0) is the left half's
            // tile of two steps before (offset t0-(u0-16)). So each step loads one W fragment, and the
            // warp keeps the left tiles of the last two steps: b1 = left(u0-8), b2 = left(u0-16).
            wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> bl, b1, b2;
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], eps);
            wmma::load_matrix_sync(b2, M + PAD + t0 + 16, L);  // left(-16) = right(0)
            wmma::load_matrix_sync(b1, M + PAD + t0 + 8, L);   // left(-8)  = right(8)
            // u0 < t0+16: both column halves have non-zero W tiles.
            for (int u0 = 0; u0 < t0 + 16; u0 += 8) {
                wmma::load_matrix_sync(a[0], Ks + u0, SK);
                wmma::load_matrix_sync(a[1], Ks + 16 * SK + u0, SK);
                wmma::load_matrix_sync(bl, M + PAD + t0 - u0, L);
#pragma unroll
                for (int i = 0; i < 2; ++i) {
                    wmma::mma_sync(acc[i][0], a[i], bl, acc[i][0]);
                    wmma::mma_sync(acc[i][1], a[i], b2, acc[i][1]);
                }
                b2 = b1;
                b1 = bl;
            }
            // t0+16 <= u0 < t0+32: the left half's W tiles are all zero; only the right half remains,
            // and its tiles are the left ones of the last two steps.
            for (int u0 = t0 + 16; u0 < t0 + 32; u0 += 8) {
                wmma::load_matrix_sync(a[0], Ks + u0, SK);
                wmma::load_matrix_sync(a[1], Ks + 16 * SK + u0, SK);
                wmma::mma_sync(acc[0][1], a[0], b2, acc[0][1]);
                wmma::mma_sync(acc[1][1], a[1], b2, acc[1][1]);
                b2 = b1;
            }
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int j = 0; j < 2; ++j)
                    wmma::store_matrix_sync(out + ((size_t)(b0 + 16 * i) * C + c) * T + t0 + 16 * j, acc[i][j],
                                            (unsigned)ldo, wmma::mem_row_major);
        }
    }
}

// Step 7, tensor cores with split inputs (3xTF32, ours). v6 rounds every input to TF32 (10-bit
// mantissa). Here each value x is split into hi = tf32(x) and lo = tf32(x - hi): x = hi + lo to about
// 21 bits, and a*b = ah*bh + ah*bl + al*bh up to the al*bl term (2^-22 relative), which is dropped.
// Three tensor-core products instead of one, the small terms first. That removes the input rounding,
// but not the tensor core's float32 accumulation, which truncates instead of rounding: measured on an
// H100 at the article's shape, rel L2 1.0e-5 here against 1.6e-5 for v6 and 3.6e-7 for the CUDA-core
// kernels. It is checked under its own bound (check.TensorCoreFP32), not float32's.
// What changed from v6: K and M are staged unrounded; after each fragment load the hi and lo parts
// are made in registers (same element layout), and each tile product is three MMAs.
// Launch, limits and shared memory: as v6 (B % 32 == 0, T % 32 == 0, compute capability 8.0+).
// Needs: compute capability 8.0 (wmma with TF32: the tf32 fragments and __float_to_tf32).
#include <mma.h>
using namespace nvcuda;

#define PAD 32

// split turns a fragment loaded with full float32 values into hi = tf32(x) and lo = tf32(x - hi).
template <typename Frag>
__device__ __forceinline__ void split(Frag &hi, Frag &lo) {
#pragma unroll
    for (int e = 0; e < hi.num_elements; ++e) {
        const float x = hi.x[e];
        const float h = wmma::__float_to_tf32(x);
        hi.x[e] = h;
        lo.x[e] = wmma::__float_to_tf32(x - h);
    }
}

// mma3 is acc += a*b with a = ah + al, b = bh + bl, the small products first.
template <typename A, typename B, typename Acc>
__device__ __forceinline__ void mma3(Acc &acc, const A &ah, const A &al, const B &bh, const B &bl) {
    wmma::mma_sync(acc, al, bh, acc);
    wmma::mma_sync(acc, ah, bl, acc);
    wmma::mma_sync(acc, ah, bh, acc);
}

extern "C" __global__ void rwkv_fwd_v7(const float *__restrict__ w, const float *__restrict__ k,
                                       float *__restrict__ out, float eps, int B, int C, int T) {
    extern __shared__ __align__(32) float smem[];
    // Row strides chosen for conflict-free fragment loads: an A fragment load reads 8 rows x 4
    // columns (SK % 32 == 4 puts them in 32 different banks), a B fragment load 4 rows x 8 columns
    // (L % 32 == 8 does). Fragment pointers stay 32-byte aligned: 16*SK and PAD+t-u0 are multiples of 8.
    const int SK = T + 4;        // row stride of K in shared memory
    const int L = T + PAD + 8;   // row length of M (T % 32 == 0, so L % 32 == 8)
    float *Ks = smem;            // 32 rows of SK floats: K[b0+r][u], full float32
    float *M = smem + 32 * SK;   // 8 rows of L floats
    const int c = blockIdx.x % C;
    const int b0 = (blockIdx.x / C) * 32;
    for (int r = 0; r < 32; ++r) {
        const float *src = k + ((size_t)(b0 + r) * C + c) * T;
        for (int u = threadIdx.x; u < T; u += blockDim.x) Ks[r * SK + u] = src[u];
    }
    for (int i = threadIdx.x; i < 8 * L; i += blockDim.x) {
        const int r = i / L, x = i - r * L;
        const int d = x - r - PAD;  // the t-u of this element
        M[i] = (d >= 0 && d < T) ? w[c * T + (T - 1) - d] : 0.f;
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
            wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a[2], al[2];
            // W tiles are Toeplitz: the right half's tile at step u0 (offset t0+16-u0) is the left half's
            // tile of two steps before (offset t0-(u0-16)). So each step loads one W fragment, and the
            // warp keeps the left tiles of the last two steps: b1 = left(u0-8), b2 = left(u0-16).
            wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> bl, b1, b2, bll, b1l, b2l;  // *l: lo parts
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], eps);
            wmma::load_matrix_sync(b2, M + PAD + t0 + 16, L);  // left(-16) = right(0)
            wmma::load_matrix_sync(b1, M + PAD + t0 + 8, L);   // left(-8)  = right(8)
            split(b2, b2l);
            split(b1, b1l);
            // u0 < t0+16: both column halves have non-zero W tiles.
            for (int u0 = 0; u0 < t0 + 16; u0 += 8) {
                wmma::load_matrix_sync(a[0], Ks + u0, SK);
                wmma::load_matrix_sync(a[1], Ks + 16 * SK + u0, SK);
                wmma::load_matrix_sync(bl, M + PAD + t0 - u0, L);
                split(a[0], al[0]);
                split(a[1], al[1]);
                split(bl, bll);
#pragma unroll
                for (int i = 0; i < 2; ++i) {
                    mma3(acc[i][0], a[i], al[i], bl, bll);
                    mma3(acc[i][1], a[i], al[i], b2, b2l);
                }
                b2 = b1;
                b2l = b1l;
                b1 = bl;
                b1l = bll;
            }
            // t0+16 <= u0 < t0+32: the left half's W tiles are all zero; only the right half remains,
            // and its tiles are the left ones of the last two steps.
            for (int u0 = t0 + 16; u0 < t0 + 32; u0 += 8) {
                wmma::load_matrix_sync(a[0], Ks + u0, SK);
                wmma::load_matrix_sync(a[1], Ks + 16 * SK + u0, SK);
                split(a[0], al[0]);
                split(a[1], al[1]);
                mma3(acc[0][1], a[0], al[0], b2, b2l);
                mma3(acc[1][1], a[1], al[1], b2, b2l);
                b2 = b1;
                b2l = b1l;
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

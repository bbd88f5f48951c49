// KernelBench level 1 problems 47-49 and 51-53: sum, mean, max, min, argmax or argmin over the
// middle dimension of x viewed as (outer, R, inner): y[o][i] = reduce over r of x[o][r][i].
//
// A strided reduction: the reduced values of one output lie inner floats apart, so a block owns
// output columns, not a row. Consecutive threads own consecutive columns and read consecutive
// addresses (coalesced, as lesson 04's kernels read rows), and each thread walks its column's R
// values with UNROLL loads issued before any is used, so that many bytes are in flight per SM
// (Little's law). When the outputs alone are too few to fill the GPU, BY threads share a column:
// thread y takes r = y, y + BY, ..., and the BY partials meet in shared memory, in r order.
// Ties: argmax and argmin keep the first index, as PyTorch does (a strict comparison along a
// thread's r, the smaller index when the BY partials tie). A NaN wins max, min, argmax and argmin
// (the first NaN), as in PyTorch. Mean is the float32 sum divided by R.
//
// Defines: OP (0 sum, 1 mean, 2 max, 3 min, 4 argmax, 5 argmin), BY (1, 2, 4 or 8).
// Launch: block (256 / BY, BY), grid (ceil(inner / (256 / BY)), outer); y is float32, int64 for
// argmax and argmin. Limits: outer <= 65535 (the grid's y), R >= 1, R * inner < 2^31.
#ifndef OP
#define OP 0
#endif
#ifndef BY
#define BY 4
#endif
#define BX (256 / BY)
#define UNROLL 8

#if OP >= 4
typedef long long out_t;
#else
typedef float out_t;
#endif

// wins reports whether v replaces best: larger (max, argmax) or smaller (min, argmin), or the
// first NaN.
__device__ __forceinline__ bool wins(float v, float best) {
#if OP == 2 || OP == 4
    return v > best || (v != v && best == best);
#else
    return v < best || (v != v && best == best);
#endif
}

extern "C" __global__ void __launch_bounds__(256)
kb_dim_reduce(const float *__restrict__ x, out_t *__restrict__ y, int R, int inner) {
    __shared__ float sv[BY][BX];
#if OP > 1
    __shared__ int si[BY][BX];
#endif
    const int col = blockIdx.x * BX + threadIdx.x;
    const bool live = col < inner;
    const float *xc = x + (long long)blockIdx.y * R * inner + (live ? col : 0);
#if OP <= 1
    float acc = 0.f;
#else
    float acc = 0.f;
    int idx = -1;  // none seen yet
#endif
    for (int r0 = threadIdx.y; r0 < R; r0 += BY * UNROLL) {
        float v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            const int r = r0 + u * BY;
            v[u] = (live && r < R) ? __ldcs(xc + (long long)r * inner) : 0.f;
        }
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
#if OP <= 1
            acc += v[u];  // the padding adds 0
#else
            const int r = r0 + u * BY;
            if (r < R && (idx < 0 || wins(v[u], acc))) {
                acc = v[u];
                idx = r;
            }
#endif
        }
    }
    if (BY > 1) {
        sv[threadIdx.y][threadIdx.x] = acc;
#if OP > 1
        si[threadIdx.y][threadIdx.x] = idx;
#endif
        __syncthreads();
        if (threadIdx.y != 0) return;
#pragma unroll
        for (int k = 1; k < BY; k++) {
            const float v = sv[k][threadIdx.x];
#if OP <= 1
            acc += v;
#else
            const int j = si[k][threadIdx.x];
            const bool tie = v == acc || (v != v && acc != acc);
            if (j >= 0 && (idx < 0 || wins(v, acc) || (tie && j < idx))) {
                acc = v;
                idx = j;
            }
#endif
        }
    }
    if (!live) return;
    out_t *out = y + (long long)blockIdx.y * inner + col;
#if OP == 0 || OP == 2 || OP == 3
    *out = acc;
#elif OP == 1
    *out = acc / (float)R;
#else
    *out = (long long)idx;
#endif
}

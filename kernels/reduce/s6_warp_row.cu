// Softmax step 6: a warp per row, for short rows.
//
// What changed: a row of 128 floats is 512 bytes. A block of 256+ threads per row (steps 2-5)
// leaves most threads without an element, pays a block-wide barrier per reduction, and needs
// 65536 blocks for 65536 rows. Here one warp owns a row: each lane keeps its share of the row in
// registers (up to 8 float4s, or 32 single floats), the max and the sum are 5 shuffles each with no
// shared memory and no barrier, and the output is written from the registers: the row is read
// once. A block of 256 threads handles 8 rows.
// Launch: grid ceil(rows / 8), block 256. Limits: cols <= 1024 (32 floats per lane). Two kernels:
// softmax_warp_row4 (float4; cols % 4 == 0 and 16-byte aligned x, y) and softmax_warp_row1 (any).
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)  // NVRTC has no <math.h>: +infinity from its bits
#endif
#define ROWS_PER_BLOCK 8
#define MAX_COLS 1024

template <bool VEC>
__device__ void warp_row(const float *__restrict__ x, float *__restrict__ y, int rows, int cols) {
    const int lane = threadIdx.x % 32;
    const long long row = (long long)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32;
    if (row >= rows) return;  // the whole warp leaves together: the shuffles below see full warps
    constexpr int N = VEC ? MAX_COLS / 128 : MAX_COLS / 32;  // loads per lane
    constexpr int W = VEC ? 4 : 1;                            // floats per load
    float v[N * W];
    const float *xr = x + row * cols;
    float m = -INFINITY;
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const int j = (i * 32 + lane) * W;
        if constexpr (VEC) {
            const float4 q = j < cols ? *reinterpret_cast<const float4 *>(xr + j) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
            v[i * 4] = q.x, v[i * 4 + 1] = q.y, v[i * 4 + 2] = q.z, v[i * 4 + 3] = q.w;
        } else {
            v[i * W] = j < cols ? xr[j] : -INFINITY;
        }
#pragma unroll
        for (int k = 0; k < W; ++k) m = fmaxf(m, v[i * W + k]);
    }
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < N * W; ++i) {
        v[i] = expf(v[i] - m);  // exp(-inf) = 0 for the padding
        s += v[i];
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    const float inv = 1.f / s;
    float *yr = y + row * cols;
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const int j = (i * 32 + lane) * W;
        if (j >= cols) continue;
        if constexpr (VEC) {
            *reinterpret_cast<float4 *>(yr + j) = make_float4(v[i * 4] * inv, v[i * 4 + 1] * inv, v[i * 4 + 2] * inv, v[i * 4 + 3] * inv);
        } else {
            yr[j] = v[i * W] * inv;
        }
    }
}

extern "C" __global__ void __launch_bounds__(256) softmax_warp_row4(const float *__restrict__ x, float *__restrict__ y, int rows, int cols) {
    warp_row<true>(x, y, rows, cols);
}
extern "C" __global__ void __launch_bounds__(256) softmax_warp_row1(const float *__restrict__ x, float *__restrict__ y, int rows, int cols) {
    warp_row<false>(x, y, rows, cols);
}

// Solution of exercise 2: the 2x upsample backward on halves with two __half2 loads per input
// element (rows 2r and 2r+1 of the output gradient), summed in float and rounded once.
#include <cuda_fp16.h>

extern "C" __global__ void up2x_bwd_mine(const __half *dy, __half *dx, int n, int h, int w) {
    const int hw = h * w;
    const __half2 *dy2 = reinterpret_cast<const __half2 *>(dy);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x, step = blockDim.x * gridDim.x; i < n; i += step) {
        const int c = i / hw;
        const int off = i - c * hw;
        const int r = off / w;
        const int col = off - r * w;
        const int top = c * hw * 2 + r * 2 * w + col;
        const float2 a = __half22float2(dy2[top]);
        const float2 b = __half22float2(dy2[top + w]);
        dx[i] = __float2half_rn((a.x + a.y) + (b.x + b.y));
    }
}

// KernelBench level 1 problem 36: RMS norm over the channels of x (B, C, H, W):
// y = x / sqrt(mean over c of x^2 + eps), one statistic per (b, h, w) position.
//
// The reduced dimension is the middle one, C floats apart by H*W: a strided reduction. PARTS
// threads share a position, each holding C / PARTS of its channels: lane l of a warp takes position
// l % (32 / PARTS) of the warp's 32 / PARTS and the channel part l / (32 / PARTS), so each load
// instruction reads PARTS runs of 128 / PARTS consecutive bytes (whole sectors) of PARTS channel
// planes, and one or two shuffles add the parts' sums. The values stay in registers (lesson 04's
// rows held on chip, here a short column): x is read once and y written once, the least traffic
// there is. All of a thread's loads are issued before the sum uses them. Streaming loads and
// stores (__ldcs, __stcs): neither x nor y is read again.
// The sum is float32 (each part in c order, then the parts); the statistic is sqrt(sum / C + eps) as
// PyTorch computes it, and each output one division.
//
// Define: C (the channels, at most 128: they are registers), PARTS (1, 2 or 4, dividing C). Launch:
// block 256, a warp takes 32 / PARTS positions per trip and strides by the grid's warps over the
// B * H * W positions: any grid (the fastest, measured: a trip per warp, no loop); hw = H * W.
#ifndef C
#define C 64
#endif
#ifndef PARTS
#define PARTS 1
#endif
#if C % PARTS != 0 || (PARTS != 1 && PARTS != 2 && PARTS != 4)
#error "PARTS must be 1, 2 or 4 and divide C"
#endif
#define SPAN (32 / PARTS)  // the positions of a warp's trip
#define CP (C / PARTS)     // the channels of a thread

extern "C" __global__ void __launch_bounds__(256)
kb_rms_norm(const float *__restrict__ x, float *__restrict__ y, long long positions, long long hw, float eps) {
    const int lane = threadIdx.x % 32, part = lane / SPAN;
    const long long warps = (long long)gridDim.x * (blockDim.x / 32);
    for (long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32; w * SPAN < positions; w += warps) {
        const long long p = w * SPAN + lane % SPAN;
        const bool live = p < positions;
        const long long b = p / hw, s = p - b * hw;
        const float *xp = x + (b * C + part * CP) * hw + s;
        float *yp = y + (b * C + part * CP) * hw + s;
        float v[CP];
#pragma unroll
        for (int c = 0; c < CP; c++) v[c] = live ? __ldcs(xp + c * hw) : 0.f;
        float ss = 0.f;
#pragma unroll
        for (int c = 0; c < CP; c++) ss += v[c] * v[c];
#pragma unroll
        for (int o = SPAN; o < 32; o *= 2) ss += __shfl_xor_sync(0xffffffffu, ss, o);
        const float d = sqrtf(ss / (float)C + eps);
        if (live) {
#pragma unroll
            for (int c = 0; c < CP; c++) __stcs(yp + c * hw, v[c] / d);
        }
    }
}

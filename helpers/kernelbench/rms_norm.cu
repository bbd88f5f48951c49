// KernelBench level 1 problem 36: RMS norm over the channels of x (B, C, H, W):
// y = x / sqrt(mean over c of x^2 + eps), one statistic per (b, h, w) position.
//
// The reduced dimension is the middle one, C floats apart by H*W: a strided reduction. A thread
// owns one position; consecutive threads own consecutive positions, so each of its C loads is
// coalesced across the warp. The C values stay in the thread's registers (lesson 04's rows held on
// chip, here a short column): x is read once and y written once, the least traffic there is. All C
// loads are issued before the sum uses them, C * 4 bytes in flight per thread. Streaming loads and
// stores (__ldcs, __stcs): neither x nor y is read again.
// The sum is float32 in c order; the statistic is sqrt(sum / C + eps) as PyTorch computes it, and
// each output one division.
//
// Define: C (the channels, at most 128: they are registers). Launch: 1D grid-stride over the
// B * H * W positions, block 256, any grid; hw = H * W.
#ifndef C
#define C 64
#endif

extern "C" __global__ void __launch_bounds__(256)
kb_rms_norm(const float *__restrict__ x, float *__restrict__ y, long long positions, long long hw, float eps) {
    for (long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; p < positions; p += (long long)gridDim.x * blockDim.x) {
        const long long b = p / hw, s = p - b * hw;
        const float *xp = x + b * C * hw + s;
        float *yp = y + b * C * hw + s;
        float v[C];
#pragma unroll
        for (int c = 0; c < C; c++) v[c] = __ldcs(xp + c * hw);
        float ss = 0.f;
#pragma unroll
        for (int c = 0; c < C; c++) ss += v[c] * v[c];
        const float d = sqrtf(ss / (float)C + eps);
#pragma unroll
        for (int c = 0; c < C; c++) __stcs(yp + c * hw, v[c] / d);
    }
}

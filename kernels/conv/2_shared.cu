// Step 2, direct convolution with the input tile and the filters in shared memory.
//
// What changed from step 1: a block of 16 x 16 threads computes a 16 x 16 tile of output pixels of
// one image for KB = 16 output channels at once (16 accumulators per thread). Channel by channel,
// the block first copies into shared memory the input patch its tile reads, (15*S + R) x (15*S + R)
// floats with the zero padding written in (so the inner loop has no bounds test), and the 16
// filters' R x R taps of that channel; then every thread runs its R*R taps from shared memory.
// Each input value now comes from global memory once per block instead of once per (tap, filter),
// and each tap read from shared memory feeds 16 multiply-adds (the filter values are broadcasts:
// every thread of the block reads the same one).
//
// Launch: block (16, 16); grid (ceil(OW/16), ceil(OH/16), N * ceil(K/16)); dynamic shared memory
// ((15*S + R)^2 + 16*R*R) floats. Limits (the plan refuses before the launch): that shared memory
// must fit in 48 KiB (R = 11, S = 4 needs 28 KiB; a 7 x 7 stride-8 layer would not fit), and
// N * ceil(K/16) <= 65535 (grid.z). Stride S makes neighbouring threads read S floats apart in the
// patch: bank conflicts for S = 2 and 4, the price of this simple layout.
#define TILE 16
#define KB 16

extern "C" __global__ void __launch_bounds__(256) conv_shared(const float *__restrict__ x, const float *__restrict__ w,
                                                              const float *__restrict__ bias, float *__restrict__ y, int N,
                                                              int C, int H, int W, int K, int R, int S, int P, int OH, int OW) {
    extern __shared__ float smem[];
    const int PT = (TILE - 1) * S + R;  // patch side
    float *patch = smem, *filt = smem + PT * PT;
    const int kgroups = (K + KB - 1) / KB;
    const int n = blockIdx.z / kgroups, k0 = (blockIdx.z % kgroups) * KB;
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TILE + tx;
    const int oh = blockIdx.y * TILE + ty, ow = blockIdx.x * TILE + tx;
    const int ih0 = blockIdx.y * TILE * S - P, iw0 = blockIdx.x * TILE * S - P;  // the patch's corner in the input
    const float *xn = x + (long long)n * C * H * W;
    float acc[KB];
#pragma unroll
    for (int j = 0; j < KB; ++j) acc[j] = 0.f;
    for (int c = 0; c < C; ++c) {
        const float *xc = xn + (long long)c * H * W;
        for (int i = tid; i < PT * PT; i += TILE * TILE) {
            const int ih = ih0 + i / PT, iw = iw0 + i % PT;
            patch[i] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? xc[(long long)ih * W + iw] : 0.f;
        }
        for (int i = tid; i < KB * R * R; i += TILE * TILE) {
            const int j = i / (R * R), k = k0 + j;
            filt[i] = k < K ? w[((long long)k * C + c) * R * R + i % (R * R)] : 0.f;
        }
        __syncthreads();
        for (int r = 0; r < R; ++r) {
            for (int s = 0; s < R; ++s) {
                const float v = patch[(ty * S + r) * PT + tx * S + s];
#pragma unroll
                for (int j = 0; j < KB; ++j) acc[j] += v * filt[j * R * R + r * R + s];
            }
        }
        __syncthreads();  // the patch and filters are overwritten by the next channel
    }
    if (oh >= OH || ow >= OW) return;
#pragma unroll
    for (int j = 0; j < KB; ++j) {
        const int k = k0 + j;
        if (k < K) y[(((long long)n * K + k) * OH + oh) * OW + ow] = acc[j] + bias[k];
    }
}

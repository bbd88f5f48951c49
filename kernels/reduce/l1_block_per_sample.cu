// Layer norm step 1: one block per sample (the slow shape).
//
// y = (x - mean) / sqrt(var + eps) * w + b over the M = C*H*W elements of each sample, with the
// mean and the (biased) variance of that sample. One block of 1024 threads owns a sample and
// makes three passes: the mean, then the variance as the mean of (x - mean)^2 (the two-pass
// formula: numerically sound), then the output. It also saves mean and 1/sqrt(var + eps) for the
// backward.
// Why it is slow: the article's shape has N = 16 samples of 4M elements, so 16 blocks run on 16 of
// the 132 SMs while 116 idle, and each block reads its 16 MB sample three times. That is the shape
// of the problem a per-sample kernel cannot escape (and roughly why eager PyTorch is slow here).
// Launch: grid N, block 1024. Limits: any M >= 1 (scalar loads, any alignment).
#define THREADS 1024

__device__ float block_sum(float v, float *sh) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    v = threadIdx.x % 32 < THREADS / 32 ? sh[threadIdx.x % 32] : 0.f;  // every warp reduces the warps' values: all threads get the sum
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    return v;
}

extern "C" __global__ void __launch_bounds__(THREADS) layernorm_block(const float *__restrict__ x, const float *__restrict__ w, const float *__restrict__ b,
                                                                     float *__restrict__ y, float *__restrict__ mean_out, float *__restrict__ rstd_out,
                                                                     int N, int M, float eps) {
    __shared__ float sh[32];
    const float *xs = x + (long long)blockIdx.x * M;
    float *ys = y + (long long)blockIdx.x * M;
    float s = 0.f;
    for (int j = threadIdx.x; j < M; j += THREADS) s += xs[j];
    const float mean = block_sum(s, sh) / M;
    float q = 0.f;
    for (int j = threadIdx.x; j < M; j += THREADS) {
        const float d = xs[j] - mean;
        q += d * d;
    }
    const float rstd = rsqrtf(block_sum(q, sh) / M + eps);
    for (int j = threadIdx.x; j < M; j += THREADS) ys[j] = (xs[j] - mean) * rstd * w[j] + b[j];
    if (threadIdx.x == 0) {
        mean_out[blockIdx.x] = mean;
        rstd_out[blockIdx.x] = rstd;
    }
}

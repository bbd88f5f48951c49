// Layer norm step 2: several blocks per sample with partial sums (the article's design).
//
// What changed from step 1: a sample is split among P blocks (grid P x N), so all SMs work.
// ln_sumsq_partials: each block adds up its part's sum and sum of squares (float4 loads when
// vec = 1) and writes the pair. ln_sumsq_normalize: each block first adds the P pairs of its
// sample (a few hundred floats from L2), takes mean = sum / M and var = sumsq / M - mean^2, then
// normalises its part of the sample and applies the weight and bias.
// Why it is faster: 132 SMs instead of 16, two reads of x instead of three.
// What is WRONG with it: var = E[x^2] - E[x]^2 subtracts two large, nearly equal numbers. For
// inputs with mean 1000 and standard deviation 0.1, E[x^2] is about 1e6 and the variance 0.01:
// float keeps 7 significant digits of 1e6, i.e. about 0.06, so the variance is lost entirely (it
// can even come out negative, and rsqrt of a negative number is NaN). Step 3 fixes it.
// Launch: both kernels grid (P, N), block 256. Limits: any M; vec = 1 needs M % 4 == 0 and 16-byte
// aligned x, y (checked by the plan).
#define THREADS 256

__device__ float block_sum(float v, float *sh) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    v = threadIdx.x % 32 < THREADS / 32 ? sh[threadIdx.x % 32] : 0.f;  // every warp reduces the warps' values: all threads get the sum
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    return v;
}

// The elements [lo, hi) of block blockIdx.x's part of a sample of M elements split into P parts
// of a multiple of 4 elements (so float4 loads stay aligned).
__device__ void part_of(int M, int P, int *lo, int *hi) {
    const int chunk = ((M + P - 1) / P + 3) / 4 * 4;
    *lo = min(M, blockIdx.x * chunk);
    *hi = min(M, *lo + chunk);
}

extern "C" __global__ void __launch_bounds__(THREADS) ln_sumsq_partials(const float *__restrict__ x, float *__restrict__ partials, int M, int P, int vec) {
    __shared__ float sh[32];
    const float *xs = x + (long long)blockIdx.y * M;
    int lo, hi;
    part_of(M, P, &lo, &hi);
    float s = 0.f, q = 0.f;
    if (vec) {
        const float4 *x4 = reinterpret_cast<const float4 *>(xs);
        for (int j = lo / 4 + threadIdx.x; j < hi / 4; j += THREADS) {
            const float4 v = x4[j];
            s += (v.x + v.y) + (v.z + v.w);
            q += (v.x * v.x + v.y * v.y) + (v.z * v.z + v.w * v.w);
        }
    } else {
        for (int j = lo + threadIdx.x; j < hi; j += THREADS) {
            const float v = xs[j];
            s += v;
            q += v * v;
        }
    }
    s = block_sum(s, sh);
    q = block_sum(q, sh);
    if (threadIdx.x == 0) {
        partials[2 * (blockIdx.y * P + blockIdx.x)] = s;
        partials[2 * (blockIdx.y * P + blockIdx.x) + 1] = q;
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) ln_sumsq_normalize(const float *__restrict__ x, const float *__restrict__ w, const float *__restrict__ b,
                                                                        float *__restrict__ y, const float *__restrict__ partials,
                                                                        float *__restrict__ mean_out, float *__restrict__ rstd_out, int M, int P, float eps, int vec) {
    __shared__ float sh[32];
    const int n = blockIdx.y;
    float s = 0.f, q = 0.f;
    for (int i = threadIdx.x; i < P; i += THREADS) {
        s += partials[2 * (n * P + i)];
        q += partials[2 * (n * P + i) + 1];
    }
    s = block_sum(s, sh);
    q = block_sum(q, sh);
    const float mean = s / M, var = q / M - mean * mean;  // the unstable formula
    const float rstd = rsqrtf(var + eps);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        mean_out[n] = mean;
        rstd_out[n] = rstd;
    }
    const float *xs = x + (long long)n * M;
    float *ys = y + (long long)n * M;
    int lo, hi;
    part_of(M, P, &lo, &hi);
    if (vec) {
        const float4 *x4 = reinterpret_cast<const float4 *>(xs), *w4 = reinterpret_cast<const float4 *>(w), *b4 = reinterpret_cast<const float4 *>(b);
        float4 *y4 = reinterpret_cast<float4 *>(ys);
        for (int j = lo / 4 + threadIdx.x; j < hi / 4; j += THREADS) {
            const float4 v = x4[j], g = w4[j], c = b4[j];
            y4[j] = make_float4((v.x - mean) * rstd * g.x + c.x, (v.y - mean) * rstd * g.y + c.y, (v.z - mean) * rstd * g.z + c.z, (v.w - mean) * rstd * g.w + c.w);
        }
    } else {
        for (int j = lo + threadIdx.x; j < hi; j += THREADS) ys[j] = (xs[j] - mean) * rstd * w[j] + b[j];
    }
}

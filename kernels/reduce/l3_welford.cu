// Layer norm step 3: Welford per thread, merged with Chan's formula (numerically stable).
//
// What changed from step 2: instead of a sum and a sum of squares, every thread keeps a triple
// (count n, mean, M2 = sum of squared deviations from that mean). A float4 of new values enters as
// its own triple (4, their mean, their M2), and two triples merge exactly (Chan et al., 1979):
//   n = na + nb,  d = mean_b - mean_a,  mean = mean_a + d * nb / n,
//   M2 = M2a + M2b + d^2 * na * nb / n.
// Only deviations from a running mean are ever squared, so nothing large cancels: with mean 1000
// and standard deviation 0.1 the variance keeps float's full relative precision, where step 2's
// E[x^2] - E[x]^2 loses all of it. Lanes merge through shuffles, warps through shared memory,
// blocks through ln_welford_finalize (one block per sample merging the P partial triples).
// ln_normalize then writes (x - mean) * rstd * w + b over grid (P, N), like step 2.
// Cost: one division per float4 and a few more multiplies, hidden behind the memory traffic.
// Out of range: a sample whose squared deviations overflow float32 (deviations from its mean beyond
// about 1.8e19) gets rstd = NaN, so its outputs are NaN, not silently the bias (rstd_of).
// Launch: ln_welford_partials and ln_normalize grid (P, N), block 256; ln_welford_finalize grid N,
// block 256. Limits: M < 2^24 (counts are floats, exact below 2^24); vec = 1 needs M % 4 == 0 and
// 16-byte aligned x, y.
#define THREADS 256
// rstd_of is 1 / sqrt(var + eps), or NaN when the variance overflowed float32 (squared deviations
// past 3.4e38: deviations from the mean beyond about 1.8e19): rsqrt(inf) = 0 would silently give
// every output the bias; NaN says the sample is out of range.
__device__ float rstd_of(float var, float eps) { return var == __int_as_float(0x7f800000) ? __int_as_float(0x7fffffff) : rsqrtf(var + eps); }

struct Welford {
    float n, mean, m2;
};

__device__ Welford chan(Welford a, Welford b) {
    const float n = a.n + b.n;
    if (n == 0.f) return a;
    const float d = b.mean - a.mean, f = b.n / n;
    return Welford{n, a.mean + d * f, a.m2 + b.m2 + d * d * a.n * f};
}

__device__ Welford block_welford(Welford v, Welford *sh) {
    for (int o = 16; o > 0; o >>= 1)
        v = chan(v, Welford{__shfl_xor_sync(0xffffffffu, v.n, o), __shfl_xor_sync(0xffffffffu, v.mean, o), __shfl_xor_sync(0xffffffffu, v.m2, o)});
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    v = threadIdx.x % 32 < blockDim.x / 32 ? sh[threadIdx.x % 32] : Welford{0.f, 0.f, 0.f};
    for (int o = 16; o > 0; o >>= 1)
        v = chan(v, Welford{__shfl_xor_sync(0xffffffffu, v.n, o), __shfl_xor_sync(0xffffffffu, v.mean, o), __shfl_xor_sync(0xffffffffu, v.m2, o)});
    return v;
}

__device__ void part_of(int M, int P, int *lo, int *hi) {
    const int chunk = ((M + P - 1) / P + 3) / 4 * 4;
    *lo = min(M, blockIdx.x * chunk);
    *hi = min(M, *lo + chunk);
}

extern "C" __global__ void __launch_bounds__(THREADS) ln_welford_partials(const float *__restrict__ x, float *__restrict__ partials, int M, int P, int vec) {
    __shared__ Welford sh[32];
    const float *xs = x + (long long)blockIdx.y * M;
    int lo, hi;
    part_of(M, P, &lo, &hi);
    Welford a{0.f, 0.f, 0.f};
    if (vec) {
        const float4 *x4 = reinterpret_cast<const float4 *>(xs);
        for (int j = lo / 4 + threadIdx.x; j < hi / 4; j += THREADS) {
            const float4 v = x4[j];
            const float m = ((v.x + v.y) + (v.z + v.w)) * 0.25f;
            const float dx = v.x - m, dy = v.y - m, dz = v.z - m, dw = v.w - m;
            a = chan(a, Welford{4.f, m, (dx * dx + dy * dy) + (dz * dz + dw * dw)});
        }
    } else {
        for (int j = lo + threadIdx.x; j < hi; j += THREADS) a = chan(a, Welford{1.f, xs[j], 0.f});
    }
    a = block_welford(a, sh);
    if (threadIdx.x == 0) {
        float *p = partials + 3 * (blockIdx.y * P + blockIdx.x);
        p[0] = a.n, p[1] = a.mean, p[2] = a.m2;
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) ln_welford_finalize(const float *__restrict__ partials, float *__restrict__ mean_out, float *__restrict__ rstd_out,
                                                                         int M, int P, float eps) {
    __shared__ Welford sh[32];
    Welford a{0.f, 0.f, 0.f};
    for (int i = threadIdx.x; i < P; i += THREADS) {
        const float *p = partials + 3 * (blockIdx.x * P + i);
        a = chan(a, Welford{p[0], p[1], p[2]});
    }
    a = block_welford(a, sh);
    if (threadIdx.x == 0) {
        mean_out[blockIdx.x] = a.mean;
        rstd_out[blockIdx.x] = rstd_of(a.m2 / M, eps);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) ln_normalize(const float *__restrict__ x, const float *__restrict__ w, const float *__restrict__ b, float *__restrict__ y,
                                                                  const float *__restrict__ mean_in, const float *__restrict__ rstd_in, int M, int P, int vec) {
    const int n = blockIdx.y;
    const float mean = mean_in[n], rstd = rstd_in[n];
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

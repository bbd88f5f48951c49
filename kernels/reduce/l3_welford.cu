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
// Out of range, made exact: a sample whose squared deviations overflow float32 (deviations from its
// mean beyond about 1.8e19, inputs near 1e20..1e30) has an infinite M2 and a finite mean. Only then
// (a branch uniform over the finalize block, never taken on ordinary inputs) the finalize block
// reads its sample again (one block for a whole sample: slow, for such samples only) and sums
// ((x - mean) * 2^-80)^2: every deviation of a float32 sample fits that scale (the sum lies in
// [2^-32, 2^122]), and layer norm is scale-invariant apart from eps, so
// rstd = 2^-80 / sqrt(M2s / M + eps * 2^-160). eps * 2^-160 is below float32's smallest subnormal
// and under 2^-100 of M2s / M there, so dropping it is exact to float32 as in float64. chan returns
// the other triple when one is empty: 0 * d^2 with d^2 = inf was NaN for means beyond 1.8e19. A
// NaN or infinite mean (an inf or NaN input) still gives NaN outputs (rstd_of), as in PyTorch.
// Launch: ln_welford_partials and ln_normalize grid (P, N), block 256; ln_welford_finalize grid N,
// block 256 (it takes x too, for the slow path). Limits: M < 2^24 (counts are floats, exact below
// 2^24); vec = 1 needs M % 4 == 0 and 16-byte aligned x, y; a sample's sum must stay finite.
#define THREADS 256
// rstd_of is 1 / sqrt(var + eps), or NaN when the variance is infinite (after the slow path, only a
// sample with an inf or NaN entry): rsqrt(inf) = 0 would silently give every output the bias.
__device__ float rstd_of(float var, float eps) { return var == __int_as_float(0x7f800000) ? __int_as_float(0x7fffffff) : rsqrtf(var + eps); }

#define SLOW_SCALE 0x1p-80f // the slow path's scale, 2^-80 (see the header)

// block_sum returns the sum of v over the block to every thread.
__device__ float block_sum(float v, float *sh) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    v = threadIdx.x % 32 < THREADS / 32 ? sh[threadIdx.x % 32] : 0.f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    return v;
}

struct Welford {
    float n, mean, m2;
};

__device__ Welford chan(Welford a, Welford b) {
    if (b.n == 0.f) return a; // also both empty
    if (a.n == 0.f) return b; // d^2 * 0 would be NaN once d^2 overflows
    const float n = a.n + b.n;
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

extern "C" __global__ void __launch_bounds__(THREADS) ln_welford_finalize(const float *__restrict__ partials, const float *__restrict__ x, float *__restrict__ mean_out,
                                                                         float *__restrict__ rstd_out, int M, int P, float eps) {
    __shared__ Welford sh[32];
    __shared__ float shs[32];
    Welford a{0.f, 0.f, 0.f};
    for (int i = threadIdx.x; i < P; i += THREADS) {
        const float *p = partials + 3 * (blockIdx.x * P + i);
        a = chan(a, Welford{p[0], p[1], p[2]});
    }
    a = block_welford(a, sh);
    if (threadIdx.x == 0) shs[0] = a.mean, shs[1] = a.m2; // thread 0's triple for all: Chan's merge
    __syncthreads();                                      // is not symmetric, lanes may differ in the last bit
    const float mean = shs[0], m2 = shs[1];
    __syncthreads(); // shs is reused by block_sum
    float rstd;
    if (isinf(m2) && isfinite(mean)) { // the slow path, uniform over the block: M2 overflowed (see the header)
        const float *xs = x + (long long)blockIdx.x * M;
        float q = 0.f;
        for (int j = threadIdx.x; j < M; j += THREADS) {
            const float d = xs[j] * SLOW_SCALE - mean * SLOW_SCALE;
            q += d * d;
        }
        rstd = SLOW_SCALE * rsqrtf(block_sum(q, shs) / M);
    } else {
        rstd = rstd_of(m2 / M, eps);
    }
    if (threadIdx.x == 0) {
        mean_out[blockIdx.x] = mean;
        rstd_out[blockIdx.x] = rstd;
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

// Layer norm step 6: teams of blocks hold a sample in their shared memory, so x is read once.
//
// What changed from steps 4 and 5: step 4 reads x twice because a long sample does not fit on one
// SM; step 5 reads it once but only for samples that fit in one block. Yet the GPU as a whole has
// 132 SMs x 227 KB = 30 MB of shared memory. This kernel launches one block per SM, all resident at
// once, split into teams of g blocks: a team holds one sample, its blocks a slice each, and the
// teams walk the samples (team t takes samples t, t + T, t + 2T, ...). For each sample every block
// of the team loads its slice of x into shared memory (the only read of x from DRAM), computes the
// slice's count, mean and sum of squared deviations exactly (two passes over shared memory),
// publishes that triple, and waits at a barrier until all g blocks of its team have published. Then
// each block merges the team's g triples with Chan's formula (step 3's merge), normalises its slice
// from shared memory and streams y out. g is the fewest blocks whose shared memory holds a sample,
// spread over all SMs when only one team fits: 5 blocks for 262144 floats (26 teams), all 132 for
// the article's 4M.
// Traffic: x read once, y written once, and w and b read once per sample: from L2 when they fit
// there (loaded with an evict-last policy; x and y pass with evict-first hints). At the article's
// shape they do not (32 MB of w and b, twice a sample), and reading them for every sample costs
// more than step 4's second read of x: there step 4 stays the faster step.
// The barrier: a counter per sample, zeroed before the launch; each block adds 1 and spins until
// it reads g. This is only safe when every block is resident at once, which the launch guarantees
// by asking for at most one block per SM and checking with the driver that one fits (the plan
// refuses otherwise). A block that spins for more than about a second (another process holding
// SMs) sets *failed and leaves instead of hanging the GPU; the host reports it.
// Shifted slices: each block sums x - K over its slice, K the slice's first value (one broadcast
// load per block and sample), and publishes the mean K + mloc; x itself stays in shared memory and
// is normalised as x - mean. A constant sample then has every slice mean exactly its value and M2
// exactly 0, as in float64. Summed unshifted, a constant slice's float32 sum rounds whenever the
// value needs most of float32's 24 bits (10000.3, 1e30): slice means off by ulps of the value gave
// the merge a spread of that size, and y came out +-w + b where b is right (at 1e30 the squared
// ulps overflow into the slow path below, which measures them exactly). Unlike step 5's one shift
// per sample, this one never rounds x: a first value far from the rest of its slice costs only its
// slice mean an error of a few 2^-24 |K - mean|, which the merge weighs by the slice's share. On
// ordinary inputs it adds a subtraction per value to each pass over shared memory.
// Out of range, made exact: a sample whose squared deviations overflow float32 (deviations from its
// mean beyond about 1.8e19, inputs near 1e20..1e30) takes a slow path, a branch uniform over the
// block, never taken on ordinary inputs. A block whose slice's sum of squares is infinite sums
// ((x - K - mloc) * 2^-80)^2 over its slice again from shared memory and publishes it negated (a
// sum of squares is never negative: the sign marks the scale). Warp 0, seeing a marked triple or an
// infinite merged M2 with a finite mean, merges the team's triples again in units of 2^-80 (means
// times 2^-80, M2 times 2^-160, marked ones as they are): every deviation of a float32 sample fits
// that scale (M2 lies in [2^-32, 2^122]), and layer norm is scale-invariant apart from eps, so
// rstd = 2^-80 / sqrt(M2s / M + eps * 2^-160). eps * 2^-160 is below float32's smallest subnormal
// and under 2^-100 of M2s / M there, so dropping it is exact to float32 as in float64. chan returns
// the other triple when one is empty (0 * d^2 with d^2 = inf was NaN). A sample with an inf or NaN
// entry still gives NaN outputs (rstd_of), as in PyTorch.
// Launch: grid T * g <= the SM count, block 1024, dynamic shared memory 16 * chunk4 bytes, chunk4 =
// ceil(M / 4 / g). Limits: M % 4 == 0 and 16-byte aligned x, y, w, b; a sample must fit in the
// shared memory of all SMs (M up to about 7.6M floats on an H100); one block per SM must fit; a
// slice's sum of x - K must stay finite.
// Needs: compute capability 8.0 (createpolicy, the L2 evict-last and evict-first cache hints).
#define THREADS 1024
#define SLOW_SCALE 0x1p-80f // the slow path's scale, 2^-80 (see the header)
// rstd_of is 1 / sqrt(var + eps), or NaN when the variance is infinite (after the slow path, only a
// sample with an inf or NaN entry): rsqrt(inf) = 0 would silently give every output the bias.
__device__ float rstd_of(float var, float eps) { return var == __int_as_float(0x7f800000) ? __int_as_float(0x7fffffff) : rsqrtf(var + eps); }

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

// block_sum returns the sum of v over the block to every thread.
__device__ float block_sum(float v, float *sh) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    v = sh[threadIdx.x % 32]; // THREADS / 32 = 32 warps: every lane has a warp's sum
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads(); // sh is reused by the next sum
    return v;
}

// Loads with an L2 cache policy (sm_80+): evict_last keeps w and b in L2 across the samples.
__device__ float4 load_keep(const float4 *p, unsigned long long policy) {
    float4 v;
    asm volatile("ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(p), "l"(policy));
    return v;
}

extern "C" __global__ void __launch_bounds__(THREADS, 1) ln_grid_resident(const float *__restrict__ x, const float *__restrict__ w, const float *__restrict__ b,
                                                                         float *__restrict__ y, float *__restrict__ mean_out, float *__restrict__ rstd_out,
                                                                         float *__restrict__ partials, unsigned int *arrived, unsigned int *failed, int N, int M,
                                                                         int g, int chunk4, float eps) {
    extern __shared__ float4 slice[];
    __shared__ float sh[32];
    __shared__ float stats[2];
    __shared__ unsigned int gave_up;
    unsigned long long keep;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(keep));
    const int team = blockIdx.x / g, rank = blockIdx.x % g, teams = gridDim.x / g;
    const int lo = min(M / 4, rank * chunk4), hi = min(M / 4, lo + chunk4), c4 = hi - lo;
    const float4 *w4 = reinterpret_cast<const float4 *>(w) + lo, *b4 = reinterpret_cast<const float4 *>(b) + lo;
    for (int n = team; n < N; n += teams) {
        const float4 *x4 = reinterpret_cast<const float4 *>(x + (long long)n * M) + lo;
        float4 *y4 = reinterpret_cast<float4 *>(y + (long long)n * M) + lo;
        const float K = c4 > 0 ? x[(long long)n * M + 4 * lo] : 0.f; // the slice's shift (see the header)
        // 1. the slice into shared memory, and the sum of x - K
        float s = 0.f;
#pragma unroll 4
        for (int j = threadIdx.x; j < c4; j += THREADS) {
            const float4 v = __ldcs(x4 + j);
            slice[j] = v;
            s += ((v.x - K) + (v.y - K)) + ((v.z - K) + (v.w - K));
        }
        const float cnt = 4.f * c4, tot = block_sum(s, sh);
        const float mloc = cnt > 0.f ? tot / cnt : 0.f; // the slice's mean is K + mloc
        // 2. the slice's squared deviations from its own mean (each thread reads what it wrote)
        float q = 0.f;
        for (int j = threadIdx.x; j < c4; j += THREADS) {
            const float4 v = slice[j];
            const float dx = (v.x - K) - mloc, dy = (v.y - K) - mloc, dz = (v.z - K) - mloc, dw = (v.w - K) - mloc;
            q += (dx * dx + dy * dy) + (dz * dz + dw * dw);
        }
        q = block_sum(q, sh); // the same in every thread: the branch below is uniform over the block
        if (isinf(q) && isfinite(mloc)) { // the slow path: the squares overflowed (see the header)
            float r = 0.f;
            for (int j = threadIdx.x; j < c4; j += THREADS) {
                const float4 v = slice[j];
                const float ms = mloc * SLOW_SCALE;
                const float dx = (v.x - K) * SLOW_SCALE - ms, dy = (v.y - K) * SLOW_SCALE - ms, dz = (v.z - K) * SLOW_SCALE - ms, dw = (v.w - K) * SLOW_SCALE - ms;
                r += (dx * dx + dy * dy) + (dz * dz + dw * dw);
            }
            q = -block_sum(r, sh); // negative: in units of 2^-160
        }
        // 3. publish the triple, then wait for the team's
        if (threadIdx.x == 0) {
            float *p = partials + 3 * ((long long)n * g + rank);
            p[0] = cnt, p[1] = K + mloc, p[2] = q;
            __threadfence(); // the triple is visible before the arrival is counted
            atomicAdd(arrived + n, 1u);
            const long long start = clock64();
            gave_up = 0u;
            while (atomicAdd(arrived + n, 0u) < (unsigned)g) {
                if (*(volatile unsigned int *)failed || clock64() - start > 2000000000LL) {
                    atomicExch(failed, 1u);
                    gave_up = 1u;
                    break;
                }
                __nanosleep(100);
            }
            __threadfence();
        }
        __syncthreads();
        if (gave_up) return; // the whole block leaves (one shared flag): the host reports it
        // 4. merge the team's triples (warp 0; read through L2, the L1 may hold stale lines)
        if (threadIdx.x < 32) {
            Welford a{0.f, 0.f, 0.f};
            bool marked = false; // a slice's sum of squares came in units of 2^-160
            for (int i = threadIdx.x; i < g; i += 32) {
                const float *p = partials + 3 * ((long long)n * g + i);
                const float m2 = __ldcg(p + 2);
                a = chan(a, Welford{__ldcg(p), __ldcg(p + 1), m2});
                marked |= m2 < 0.f;
            }
            for (int o = 16; o > 0; o >>= 1)
                a = chan(a, Welford{__shfl_xor_sync(0xffffffffu, a.n, o), __shfl_xor_sync(0xffffffffu, a.mean, o), __shfl_xor_sync(0xffffffffu, a.m2, o)});
            // lane 0's verdict for the whole warp: Chan's merge is not symmetric, lanes may differ in the last bit
            const bool slow = __shfl_sync(0xffffffffu, (__any_sync(0xffffffffu, marked) || isinf(a.m2)) && isfinite(a.mean), 0);
            float rstd;
            if (slow) { // the slow path: the team's triples again in units of 2^-80 (see the header)
                Welford s{0.f, 0.f, 0.f};
                for (int i = threadIdx.x; i < g; i += 32) {
                    const float *p = partials + 3 * ((long long)n * g + i);
                    const float m2 = __ldcg(p + 2);
                    s = chan(s, Welford{__ldcg(p), __ldcg(p + 1) * SLOW_SCALE, m2 < 0.f ? -m2 : m2 * SLOW_SCALE * SLOW_SCALE});
                }
                for (int o = 16; o > 0; o >>= 1)
                    s = chan(s, Welford{__shfl_xor_sync(0xffffffffu, s.n, o), __shfl_xor_sync(0xffffffffu, s.mean, o), __shfl_xor_sync(0xffffffffu, s.m2, o)});
                rstd = SLOW_SCALE * rsqrtf(s.m2 / M);
            } else {
                rstd = rstd_of(a.m2 / M, eps);
            }
            if (threadIdx.x == 0) {
                stats[0] = a.mean, stats[1] = rstd;
                if (rank == 0) mean_out[n] = stats[0], rstd_out[n] = stats[1];
            }
        }
        __syncthreads();
        const float mean = stats[0], rstd = stats[1];
        // 5. normalise the slice from shared memory; y streams out
        for (int j = threadIdx.x; j < c4; j += THREADS) {
            const float4 v = slice[j], g = load_keep(w4 + j, keep), c = load_keep(b4 + j, keep);
            __stcs(y4 + j, make_float4((v.x - mean) * rstd * g.x + c.x, (v.y - mean) * rstd * g.y + c.y, (v.z - mean) * rstd * g.z + c.z,
                                       (v.w - mean) * rstd * g.w + c.w));
        }
        __syncthreads(); // stats[] is rewritten for the next sample
    }
}

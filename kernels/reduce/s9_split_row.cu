// Softmax step 9: split each row across many blocks, in two passes. For GPUs without thread block
// clusters, and for rows longer than a cluster holds.
//
// What changed from step 4: step 4 gives a row to one block. With few long rows (8 rows of a
// million floats) that is 8 busy SMs out of 132. Here a row is cut into chunks of chunk4 float4s,
// one block each, and the work takes two launches:
//   1. softmax_split_stats: each block finds its chunk's online pair (max, sum of exp(x - max)),
//      step 4's merge, and writes it to part[row * chunks + chunk].
//   2. softmax_split_write: each block merges its row's pairs (a few dozen: cheap) into the row's
//      pair, then reads its chunk again and writes y.
// The kernel boundary is the barrier between the blocks of a row, which clusters (steps 5 and 8)
// give on Hopper without a second launch and without the second read of x. As in step 8, rows of
// any length and views of any alignment keep their float4 body: the 0-3 floats before a row's
// first 16-byte boundary (the head) go to the first threads of chunk 0, the 0-3 after its last
// whole float4 (the tail) to threads 32.. of the last chunk.
// Traffic: x twice (the second read comes from L2 only when the first pass's chunks are still
// there), y once, the pairs negligibly.
// Masked entries as in step 4: exponents are taken against safe(m), 0 while a pair has seen only
// -inf, so a chunk that is all -inf publishes (-inf, 0) and adds nothing, and a NaN entry keeps
// its pair's sum NaN (an all -inf chunk with a NaN publishes (-inf, NaN)): the row is NaN, as in
// PyTorch.
// Log-softmax (defined LOG_SOFTMAX): the same two passes; the write emits x - (max + log(sum))
// instead of exp(x - max) / sum, which is log_softmax (KernelBench level 1 problem 24 runs it).
// Launch: both kernels on grid rows * chunks, block 512; part holds rows * chunks float2s.
// Limits: any cols >= 1; vec = 1 only when x and y are equally aligned modulo 16 bytes.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)  // NVRTC has no <math.h>: +infinity from its bits
#endif
#define THREADS 512
#define WARPS (THREADS / 32)

struct MS {
    float m, s;
};

// safe is the max the exponents are taken against: 0 while only -inf was seen (exp(-inf - 0) = 0).
__device__ float safe(float m) { return m == -INFINITY ? 0.f : m; }

// merge combines two running (max, sum) pairs into the pair of their union (step 4's).
__device__ MS merge(MS a, MS b) {
    const float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return MS{m, a.s + b.s};  // both empty: 0, or NaN after a NaN entry
    return MS{m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

// add folds one value into a running pair (a -inf, a masked entry, adds exactly 0).
__device__ MS add(MS p, float v) {
    const float m = fmaxf(p.m, v), e = safe(m);
    return MS{m, p.s * expf(p.m - e) + expf(v - e)};
}

// block_merge returns the block's merged pair to every thread.
__device__ MS block_merge(MS v, MS *sh) {
    for (int o = 16; o > 0; o >>= 1) v = merge(v, MS{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)});
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = lane < WARPS ? sh[lane] : MS{-INFINITY, 0.f};
    for (int o = 16; o > 0; o >>= 1) v = merge(v, MS{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)});
    return v;
}

__device__ float4 load4(const float *p, int vec) {
    if (vec) return *reinterpret_cast<const float4 *>(p);
    return make_float4(p[0], p[1], p[2], p[3]);
}
__device__ void store4(float *p, float4 v, int vec) {
    if (vec) {
        __stcs(reinterpret_cast<float4 *>(p), v);
        return;
    }
    __stcs(p, v.x);
    __stcs(p + 1, v.y);
    __stcs(p + 2, v.z);
    __stcs(p + 3, v.w);
}

// Where block b works: its row, its chunk, the row's head and float4 count, and the one head or
// tail float this thread holds (-1: none).
struct Part {
    long long row;
    int chunk, head, n4, begin, end, extra;
};
__device__ Part part_of(const float *x, int cols, int chunks, int chunk4, int vec) {
    Part p;
    p.row = blockIdx.x / chunks;
    p.chunk = blockIdx.x % chunks;
    const float *xr = x + p.row * cols;
    p.head = vec ? min(cols, (int)(((16 - ((unsigned long long)xr & 15)) & 15) / 4)) : 0;
    p.n4 = (cols - p.head) / 4;
    const int tail = cols - p.head - 4 * p.n4, t = threadIdx.x;
    p.begin = p.chunk * chunk4;
    p.end = min(p.begin + chunk4, p.n4);
    p.extra = -1;
    if (p.chunk == 0 && t < p.head) p.extra = t;
    if (p.chunk == chunks - 1 && t >= 32 && t - 32 < tail) p.extra = p.head + 4 * p.n4 + (t - 32);
    return p;
}

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_split_stats(const float *__restrict__ x, float2 *__restrict__ part, int rows, int cols, int chunks, int chunk4, int vec) {
    __shared__ MS sh[WARPS];
    const Part w = part_of(x, cols, chunks, chunk4, vec);
    const float *xr = x + w.row * cols;
    MS p{-INFINITY, 0.f};
    if (w.extra >= 0) p = add(p, xr[w.extra]);
    for (int j = w.begin + threadIdx.x; j < w.end; j += THREADS) {
        const float4 v = load4(xr + w.head + 4 * j, vec);
        const float m = fmaxf(p.m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w))), e = safe(m);
        p.s = p.s * expf(p.m - e) + expf(v.x - e) + expf(v.y - e) + expf(v.z - e) + expf(v.w - e);
        p.m = m;
    }
    p = block_merge(p, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = make_float2(p.m, p.s);
}

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_split_write(const float *__restrict__ x, const float2 *__restrict__ part, float *__restrict__ y, int rows, int cols, int chunks, int chunk4, int vec) {
    __shared__ MS sh[WARPS];
    const Part w = part_of(x, cols, chunks, chunk4, vec);
    MS p{-INFINITY, 0.f};
    for (int c = threadIdx.x; c < chunks; c += THREADS) {
        const float2 q = part[w.row * chunks + c];
        p = merge(p, MS{q.x, q.y});
    }
    p = block_merge(p, sh);
#ifdef LOG_SOFTMAX
    const float lse = p.m + logf(p.s);  // all -inf: -inf, and x - lse is NaN as in PyTorch
#define OUT(v) ((v) - lse)
#else
    const float m = p.m, inv = 1.f / p.s;
#define OUT(v) (expf((v) - m) * inv)
#endif
    const float *xr = x + w.row * cols;
    float *yr = y + w.row * cols;
    if (w.extra >= 0) __stcs(yr + w.extra, OUT(xr[w.extra]));
    for (int j = w.begin + threadIdx.x; j < w.end; j += THREADS) {
        const float4 v = load4(xr + w.head + 4 * j, vec);
        store4(yr + w.head + 4 * j, make_float4(OUT(v.x), OUT(v.y), OUT(v.z), OUT(v.w)), vec);
    }
#undef OUT
}

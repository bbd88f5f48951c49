// Softmax step 8b: long rows streamed, the second read from L2, two rows in flight.
//
// What changed from step 8: step 8 holds a row in the cluster's registers and shared memory, so
// each SM first only reads (its part of x), then waits at the cluster barrier, then only writes.
// For long rows the SM's memory pipe idles at every barrier, and a 16-block cluster of 1024-thread
// blocks fits only 7 times on an H100 (112 SMs): long rows reach about 60% of the copy bandwidth.
// Here nothing is held on chip. A persistent cluster walks its rows, and each block streams its
// part of a row twice:
//   - pass 1 of row r reads x from DRAM with an L2 "evict last" hint and folds it into an online
//     (max, sum) pair, step 4's update;
//   - the cluster merges its blocks' pairs (distributed shared memory, as in step 5);
//   - pass 2 of row r reads x again, now from L2 (the row was read moments ago and asked to stay),
//     and writes y; in the SAME loop the block runs pass 1 of its next row, so DRAM always has
//     reads in flight while y streams out, and the barrier is the only pause per row.
// DRAM traffic is still x once and y once, as long as the rows in flight (one per cluster) stay
// in L2 between their two reads: 15 clusters x a 1 MB row = 15 MB of the H100's 50 MB.
// What the lesson measured: that "as long as" is the catch. The H100's L2 is two halves of 25 MB,
// and y streams through it too: past about 15 MB of rows in flight the second read goes to DRAM,
// and the step falls to the two-read speed of steps 4 and 9 (the sweep shows where).
// The pairs are double-buffered: a block writes row r+1's pair while slower blocks may still read
// row r's, and the barrier of row r+1 orders the reuse of row r's slot.
// Heads and tails as in step 8 (the first threads of block 0 hold the row's 0-3 floats before its
// first 16-byte boundary and 0-3 after its last float4).
// Masked entries as in step 4: exponents are taken against safe(m), 0 while a pair has seen only
// -inf, so -inf entries add exactly 0 and a NaN entry keeps the row NaN, as in PyTorch.
// Launch: grid C * CLUSTER, C at most the clusters that fit at once and at most rows, block B
// threads (a multiple of 32); compiled with -DCLUSTER=c. Limits: cols < 2^31; vec = 1 only when x
// and y are equally aligned modulo 16 bytes.
// Needs: compute capability 9.0 (clusters; the L2 cache hints need 8.0).
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)  // NVRTC has no <math.h>: +infinity from its bits
#endif
#ifndef CLUSTER
#define CLUSTER 8
#endif
#define U 4  // float4s per thread per loop trip: 4 DRAM and 4 L2 reads in flight before any is used

__device__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ void cluster_sync() { asm volatile("barrier.cluster.arrive;\n\tbarrier.cluster.wait;" ::: "memory"); }
__device__ float load_remote(const float *p, unsigned rank) {
    const unsigned local = (unsigned)__cvta_generic_to_shared(p);
    unsigned remote;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
    return v;
}

// An L2 policy that keeps lines until the ones without it are gone (x between its two reads).
__device__ unsigned long long evict_last() {
    unsigned long long p;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
    return p;
}
__device__ float4 load_keep(const float4 *p, unsigned long long pol) {
    float4 v;
    asm volatile("ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p), "l"(pol));
    return v;
}
__device__ float load_keep1(const float *p, unsigned long long pol) {
    float v;
    asm volatile("ld.global.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(v) : "l"(p), "l"(pol));
    return v;
}
// A slot of four floats: one 16-byte access when vec, four single ones otherwise. The first read
// keeps its lines in L2; the second is their last use (__ldcs: evict first).
__device__ float4 first4(const float *p, int vec, unsigned long long pol) {
    if (vec) return load_keep(reinterpret_cast<const float4 *>(p), pol);
    return make_float4(load_keep1(p, pol), load_keep1(p + 1, pol), load_keep1(p + 2, pol), load_keep1(p + 3, pol));
}
__device__ float4 again4(const float *p, int vec) {
    if (vec) return __ldcs(reinterpret_cast<const float4 *>(p));
    return make_float4(__ldcs(p), __ldcs(p + 1), __ldcs(p + 2), __ldcs(p + 3));
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

struct MS {
    float m, s;
};
// safe is the max the exponents are taken against: 0 while only -inf was seen (exp(-inf - 0) = 0).
__device__ float safe(float m) { return m == -INFINITY ? 0.f : m; }
__device__ MS merge(MS a, MS b) {
    const float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return MS{m, a.s + b.s};  // both empty: 0, or NaN after a NaN entry
    return MS{m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}
// add4 folds four values into a running pair (-inf entries add exactly 0).
__device__ MS add4(MS p, float4 v) {
    const float m = fmaxf(p.m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w))), e = safe(m);
    return MS{m, p.s * expf(p.m - e) + expf(v.x - e) + expf(v.y - e) + expf(v.z - e) + expf(v.w - e)};
}
__device__ MS block_merge(MS v, MS *sh) {
    for (int o = 16; o > 0; o >>= 1) v = merge(v, MS{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)});
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = lane < warps ? sh[lane] : MS{-INFINITY, 0.f};
    for (int o = 16; o > 0; o >>= 1) v = merge(v, MS{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)});
    __syncthreads();  // sh is reused by the next row's merge
    return v;
}

// Row is where one row's data lie for this block: the row's head, its float4 count, this block's
// range of float4s, and the one head or tail float this thread holds (-1: none).
struct Row {
    const float *x;
    float *y;
    int head, n4, begin, end, extra;
};
__device__ Row row_of(const float *x, float *y, long long row, int cols, int vec, int rank) {
    Row r;
    r.x = x + row * cols;
    r.y = y + row * cols;
    r.head = vec ? min(cols, (int)(((16 - ((unsigned long long)r.x & 15)) & 15) / 4)) : 0;
    r.n4 = (cols - r.head) / 4;
    const int tail = cols - r.head - 4 * r.n4, part = (r.n4 + CLUSTER - 1) / CLUSTER;
    r.begin = min(rank * part, r.n4);
    r.end = min(r.begin + part, r.n4);
    r.extra = -1;
    if (rank == 0 && (int)threadIdx.x < r.head + tail)
        r.extra = threadIdx.x < r.head ? threadIdx.x : r.head + 4 * r.n4 + (threadIdx.x - r.head);
    return r;
}

extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(1024)
softmax_cluster_stream(const float *__restrict__ x, float *__restrict__ y, int rows, int cols, int vec) {
    __shared__ MS sh[32];
    __shared__ MS pair[2];  // this block's pair of the current row, double-buffered by row parity
    const int rank = (int)cluster_rank();
    const long long stride = gridDim.x / CLUSTER;
    const unsigned long long keep = evict_last();
    long long row = blockIdx.x / CLUSTER;
    if (row >= rows) return;  // the whole cluster leaves together: its first row is the same
    Row cur = row_of(x, y, row, cols, vec, rank);
    MS p{-INFINITY, 0.f};  // pass 1 of the first row, alone
    if (cur.extra >= 0) p = add4(p, make_float4(load_keep1(cur.x + cur.extra, keep), -INFINITY, -INFINITY, -INFINITY));
    for (int i0 = cur.begin + threadIdx.x; i0 < cur.end; i0 += U * blockDim.x) {
        float4 a[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int j = i0 + u * blockDim.x;
            a[u] = j < cur.end ? first4(cur.x + cur.head + 4 * j, vec, keep) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) p = add4(p, a[u]);
    }
    for (int k = 0;; ++k) {
        p = block_merge(p, sh);
        if (threadIdx.x == 0) pair[k & 1] = p;
        cluster_sync();  // every block's pair of this row is written
        MS all{-INFINITY, 0.f};
#pragma unroll
        for (int r = 0; r < CLUSTER; ++r)
            all = merge(all, MS{load_remote(&pair[k & 1].m, r), load_remote(&pair[k & 1].s, r)});
        const float M = all.m, inv = 1.f / all.s;
        const long long next = row + stride;
        const bool more = next < rows;
        Row nxt = more ? row_of(x, y, next, cols, vec, rank) : cur;
        p = MS{-INFINITY, 0.f};
        // Pass 2 of this row (x from L2) and pass 1 of the next (x from DRAM), in one loop.
        if (cur.extra >= 0) __stcs(cur.y + cur.extra, expf(__ldcs(cur.x + cur.extra) - M) * inv);
        if (more && nxt.extra >= 0) p = add4(p, make_float4(load_keep1(nxt.x + nxt.extra, keep), -INFINITY, -INFINITY, -INFINITY));
        const int n = max(cur.end - cur.begin, more ? nxt.end - nxt.begin : 0);
        for (int i0 = threadIdx.x; i0 < n; i0 += U * blockDim.x) {
            float4 a[U], v[U];
#pragma unroll
            for (int u = 0; u < U; ++u) {  // every load issued before any is used
                const int i = i0 + u * blockDim.x, jn = nxt.begin + i, jc = cur.begin + i;
                a[u] = more && jn < nxt.end ? first4(nxt.x + nxt.head + 4 * jn, vec, keep) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
                v[u] = jc < cur.end ? again4(cur.x + cur.head + 4 * jc, vec) : make_float4(0.f, 0.f, 0.f, 0.f);
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int jc = cur.begin + i0 + u * blockDim.x;
                if (jc < cur.end)
                    store4(cur.y + cur.head + 4 * jc,
                           make_float4(expf(v[u].x - M) * inv, expf(v[u].y - M) * inv, expf(v[u].z - M) * inv, expf(v[u].w - M) * inv), vec);
                p = add4(p, a[u]);
            }
        }
        if (!more) break;
        row = next;
        cur = nxt;
    }
    cluster_sync();  // no block leaves (freeing its shared memory) while another still reads it
}

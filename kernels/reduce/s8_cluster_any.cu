// Softmax step 8: any row length, still read once. Step 5 with three limits lifted.
//
// What changed from step 5:
//   - Longer rows. Step 5 stops at 8 blocks x 1024 threads x 32 floats = 262144 floats. Here a
//     cluster may have 16 blocks (the H100's non-portable maximum: the host must allow it before
//     the launch), and each thread may also park SVECS float4s in dynamic shared memory next to
//     the VECS it holds in registers. An SM has 256 KB of registers and 228 KB of shared memory;
//     together a 16-block cluster holds a row of 1,048,576 floats (4 MB) and more.
//   - Any length. Step 5 needs cols % 4 == 0. Here a row is cut into a head (the 0-3 floats before
//     its first 16-byte boundary), a body of float4s and a tail (the 0-3 floats after the last
//     whole float4). The head and tail go one float each to the first threads of block 0, which
//     hold them in one extra register. When cols % 4 != 0 each row starts at a different offset
//     from a 16-byte boundary, so the head is worked out per row.
//   - Any alignment. A view that starts off a 16-byte boundary only moves the head. When x and y
//     are not equally aligned (their addresses differ by a non-multiple of 16 bytes), vec = 0 and
//     the same slots are loaded and stored as four single floats each.
//   - The part in shared memory is copied there with cp.async, without passing through registers,
//     so those loads are in flight together with the register ones.
//   - One cluster barrier per row instead of two, but for the last: the (max, sum) pairs are
//     double-buffered, so a block need not wait for the others to read its pair before it goes on.
//   - Clusters of any size from 1 to 8 blocks, then 16: the plan takes the smallest that holds the
//     row, because fewer, fuller blocks per row measured faster than more blocks holding less.
//   - Persistent clusters of 8 and 16 blocks: a new 16-block cluster needs 16 free SMs of one GPC
//     at the same moment, and waiting for them idles the SMs that are free. Here the largest
//     clusters are launched only as many as fit at once and loop over the rows.
//   - One exp per element: the sum pass keeps exp(x - block max) in place of x (registers and
//     shared memory), and the write multiplies it by exp(block max - row max) / row sum.
//   - Two blocks per SM: blocks of 512 threads (MAXT) with at most 106 KB of shared memory each,
//     two of them on an SM (MINB), so one block's reads overlap the other's writes. Step 5's
//     blocks of 1024 threads hold one per SM. The loops over shared memory are not unrolled:
//     unrolled, the compiler kept each slot's address in a register and spilled registers to local
//     memory (up to 136 bytes a thread), which cost up to 5 points of the copy bandwidth.
//   - Masked rows (-inf entries): a block whose part of the row is all -inf has max -inf, and
//     exp(-inf - -inf) is NaN. Its exponents are taken against 0 instead (exp(-inf - 0) = 0), so
//     it keeps zeros and publishes (-inf, 0); its scale is 0 / S, which is 0 when the row has a
//     finite entry and NaN when the row is all -inf (S = 0), as in PyTorch. A NaN entry keeps its
//     block's sum NaN, and the cluster's merge adds an empty block's sum, so the row is NaN.
// Why it is as fast as step 5: the body still moves as float4s, every load is issued before any
// is used, and x is read from memory once; the head and tail are at most 6 floats of a row.
// Launch: grid C * CLUSTER, C = rows, or for 8 and 16 blocks the clusters that fit at once (the
// driver's cuOccupancyMaxActiveClusters) if fewer; block B threads (a multiple of 32, at most 1024), dynamic shared
// memory B * SVECS * 16 bytes; compiled with -DCLUSTER=c -DVECS=v -DSVECS=s -DMAXT=B -DMINB=b
// (blocks per SM the registers must allow). The plan picks them
// so that the cluster holds a row: ceil(cols / 4) <= CLUSTER * B * (VECS + SVECS).
// Limits: cols < 2^31, the row fits the cluster (the plan checks), vec = 1 only when x and y are
// equally aligned modulo 16 bytes.
// Needs: compute capability 9.0 (thread block clusters and distributed shared memory).
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)  // NVRTC has no <math.h>: +infinity from its bits
#endif

#ifndef CLUSTER
#define CLUSTER 2
#endif
#ifndef VECS
#define VECS 8
#endif
#ifndef SVECS
#define SVECS 0
#endif

// The cluster operations, as in step 5: this block's rank, the cluster-wide barrier, and a float
// read from another block's shared memory.
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

__device__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
// The block's maximum (op 0) or sum (op 1) of v, for blocks of up to 1024 threads.
__device__ float block_reduce(float v, int op, float *sh) {
    v = op == 0 ? warp_max(v) : warp_sum(v);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = lane < warps ? sh[lane] : (op == 0 ? -INFINITY : 0.f);
    v = op == 0 ? warp_max(v) : warp_sum(v);
    __syncthreads();
    return v;
}

// A slot of four consecutive floats at p: one 16-byte access when vec, four single ones otherwise.
__device__ float4 load4(const float *p, int vec) {
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
// Copies 16 bytes from global to shared memory without passing through registers (cp.async,
// compute capability 8.0): the copy runs while the thread goes on; stash_wait waits for them all.
__device__ void stash16(float4 *dst, const float *src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src) : "memory");
}
__device__ void stash_wait() { asm volatile("cp.async.commit_group;\n\tcp.async.wait_group 0;" ::: "memory"); }

__device__ float max4(float4 v) { return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)); }
__device__ float4 exp4(float4 v, float m) { return make_float4(expf(v.x - m), expf(v.y - m), expf(v.z - m), expf(v.w - m)); }
__device__ float sum4(float4 v) { return (v.x + v.y) + (v.z + v.w); }
__device__ float4 mul4(float4 v, float f) { return make_float4(v.x * f, v.y * f, v.z * f, v.w * f); }

#ifndef MAXT
#define MAXT 1024  // the most threads a block has
#endif
#ifndef MINB
#define MINB 1  // the blocks an SM must hold at once (the compiler caps registers to match)
#endif
extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(MAXT, MINB)
softmax_cluster_any(const float *__restrict__ x, float *__restrict__ y, int rows, int cols, int vec) {
    extern __shared__ float4 stash[];  // SVECS float4s per thread: stash[i * blockDim.x + threadIdx.x]
    __shared__ float sh[32];
    __shared__ float pair[2][2];  // this block's (max, sum) per row parity, read by the whole cluster
    const int rank = (int)cluster_rank();
    const int B = blockDim.x, base = rank * B * (VECS + SVECS) + threadIdx.x;
    const float4 none = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    // Clusters walk the rows (cluster c takes rows c, c + C, c + 2C, ...). For clusters of 8 and 16
    // blocks the host launches only as many as fit on the GPU at once (persistent clusters), so no
    // cluster waits for 8 or 16 SMs of one GPC to come free between rows; smaller clusters are
    // launched one per row (C = rows), which measured faster for them.
    int k = 0;  // the rows this cluster has done: pair[k & 1] is the current row's
    for (long long row = blockIdx.x / CLUSTER; row < rows; row += gridDim.x / CLUSTER, ++k) {
        const float *xr = x + row * cols;
        float *yr = y + row * cols;
        // The head: floats before the row's first 16-byte boundary (x and y share it when vec).
        const int head = vec ? min(cols, (int)(((16 - ((unsigned long long)xr & 15)) & 15) / 4)) : 0;
        const int n4 = (cols - head) / 4, tail = cols - head - 4 * n4;
        const float *xb = xr + head;
        float *yb = yr + head;

        float4 v[VECS > 0 ? VECS : 1];
#pragma unroll
        for (int i = 0; i < VECS; ++i) {  // all loads issued before any is used
            const int j = base + i * B;
            v[i] = j < n4 ? load4(xb + 4 * j, vec) : none;
        }
#pragma unroll 1
        for (int i = 0; i < SVECS; ++i) {  // straight to shared memory when 16-byte aligned
            const int j = base + (VECS + i) * B;
            if (j < n4 && vec)
                stash16(&stash[i * B + threadIdx.x], xb + 4 * j);
            else
                stash[i * B + threadIdx.x] = j < n4 ? load4(xb + 4 * j, vec) : none;
        }
        // One extra float per thread for the head and tail (threads 0 .. head + tail - 1 of block 0).
        int e = -1;
        float ev = -INFINITY;
        if (rank == 0 && (int)threadIdx.x < head + tail) {
            e = threadIdx.x < head ? threadIdx.x : head + 4 * n4 + (threadIdx.x - head);
            ev = __ldcs(xr + e);
        }

        float m = ev;
#pragma unroll
        for (int i = 0; i < VECS; ++i) m = fmaxf(m, max4(v[i]));
        if (SVECS > 0) stash_wait();  // this thread's copies have landed (it reads only its own)
#pragma unroll 1
        for (int i = 0; i < SVECS; ++i) m = fmaxf(m, max4(stash[i * B + threadIdx.x]));
        m = block_reduce(m, 0, sh);
        // A block with nothing but -inf (masked entries, or past the row's end) takes its
        // exponents against 0: exp(-inf - 0) = 0, where exp(-inf - -inf) would be NaN.
        const float mu = m == -INFINITY ? 0.f : m;
        float s = 0.f;
        if (e >= 0) s = expf(ev - mu);
#pragma unroll
        for (int i = 0; i < VECS; ++i) {
            v[i] = exp4(v[i], mu);
            s += sum4(v[i]);
        }
#pragma unroll 1
        for (int i = 0; i < SVECS; ++i) {
            const float4 t = exp4(stash[i * B + threadIdx.x], mu);
            stash[i * B + threadIdx.x] = t;
            s += sum4(t);
        }
        s = block_reduce(s, 1, sh);
        if (threadIdx.x == 0) {
            pair[k & 1][0] = m;
            pair[k & 1][1] = s;
        }
        // The only barrier of the row: every block's pair is written. The pairs are double-buffered
        // by row parity: a block writes row k + 2's pair into this slot only after the barrier of
        // row k + 1, which no block passes before it has read row k's pairs.
        cluster_sync();
        float pm[CLUSTER], ps[CLUSTER], M = -INFINITY, S = 0.f;
#pragma unroll
        for (int r = 0; r < CLUSTER; ++r) {
            pm[r] = load_remote(&pair[k & 1][0], r);
            ps[r] = load_remote(&pair[k & 1][1], r);
            M = fmaxf(M, pm[r]);
        }
#pragma unroll
        for (int r = 0; r < CLUSTER; ++r)
            S += pm[r] == -INFINITY ? ps[r] : ps[r] * expf(pm[r] - M);  // an empty block's sum: 0, or NaN
        // After its last row a block may leave, freeing its shared memory: before that, a second
        // barrier makes sure every block has read its pair. It comes before the writes, so no block
        // waits for another's writes to leave (a freed SM takes the next cluster sooner).
        if (row + gridDim.x / CLUSTER >= rows) cluster_sync();
        const float inv = 1.f / S;
        if (e >= 0) __stcs(yr + e, expf(ev - M) * inv);
        const float f = (m == -INFINITY ? 0.f : expf(m - M)) * inv;  // 0 * inv: NaN when the row is all -inf
#pragma unroll
        for (int i = 0; i < VECS; ++i) {
            const int j = base + i * B;
            if (j < n4) store4(yb + 4 * j, mul4(v[i], f), vec);
        }
#pragma unroll 1
        for (int i = 0; i < SVECS; ++i) {
            const int j = base + (VECS + i) * B;
            if (j < n4) store4(yb + 4 * j, mul4(stash[i * B + threadIdx.x], f), vec);
        }
    }
}

// Softmax step 5: read the row once. A thread block cluster holds the whole row in registers.
//
// What changed from step 4: the minimum traffic of softmax is one read of x and one write of y.
// Step 4 reads x twice because a 64K-float row (256 KB) fits neither in one SM's registers
// (256 KB, but a thread can hold at most 255 of them) nor in its shared memory (228 KB). Hopper
// (compute capability 9.0) can launch blocks in clusters that run at the same time on nearby SMs
// and read each other's shared memory ("distributed shared memory"). Here a cluster of CLUSTER
// blocks splits a row: each block loads its part, VECS float4s per thread, into registers, finds
// its part's (max, sum) pair, and publishes it in its own shared memory; after a cluster barrier
// every block reads all CLUSTER pairs from its neighbours, merges them into the row's pair, and
// writes its part of y straight from its registers. x is read from memory exactly once.
// Why it is faster: a third less DRAM traffic than step 4 whenever step 4's second read misses L2.
// Launch: grid rows * CLUSTER (blocks c*CLUSTER .. c*CLUSTER+CLUSTER-1 are row c's cluster),
// block B threads (a multiple of 32, at most 1024); compiled with -DCLUSTER=c -DVECS=v.
// Limits: cols % 4 == 0, x and y 16-byte aligned, cols <= CLUSTER * B * VECS * 4 (the plan
// checks all three and picks CLUSTER; the portable cluster limit is 8 blocks).
// Needs: compute capability 9.0 (thread block clusters and distributed shared memory).
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)  // NVRTC has no <math.h>: +infinity from its bits
#endif
// The cluster operations are four PTX instructions of sm_90, written inline so that the file
// needs no header (cooperative_groups' cluster API wraps the same instructions).

#ifndef CLUSTER
#define CLUSTER 2
#endif
#ifndef VECS
#define VECS 8
#endif

// This block's rank in its cluster (0 .. CLUSTER-1).
__device__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
// A barrier over every thread of every block of the cluster; shared-memory writes before it are
// visible to the whole cluster after it (arrive releases, wait acquires).
__device__ void cluster_sync() { asm volatile("barrier.cluster.arrive;\n\tbarrier.cluster.wait;" ::: "memory"); }
// Reads the float at p in the shared memory of block `rank` of the cluster (distributed shared
// memory): mapa turns this block's shared address into that block's.
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

extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(1024)
softmax_cluster(const float *__restrict__ x, float *__restrict__ y, int rows, int cols) {
    __shared__ float sh[32];
    __shared__ float pair[2];  // this block's (max, sum), read by the whole cluster
    const int rank = (int)cluster_rank();
    const long long row = blockIdx.x / CLUSTER;
    const int n4 = cols / 4, part = blockDim.x * VECS;  // float4s per block
    const float4 *x4 = reinterpret_cast<const float4 *>(x + row * cols);
    float4 *y4 = reinterpret_cast<float4 *>(y + row * cols);
    const int base = rank * part + threadIdx.x;

    float4 v[VECS];
    float m = -INFINITY;
#pragma unroll
    for (int i = 0; i < VECS; ++i) {  // all loads issued before any is used
        const int j = base + i * blockDim.x;
        v[i] = j < n4 ? __ldcs(x4 + j) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    }
#pragma unroll
    for (int i = 0; i < VECS; ++i) m = fmaxf(m, fmaxf(fmaxf(v[i].x, v[i].y), fmaxf(v[i].z, v[i].w)));
    m = block_reduce(m, 0, sh);
    float s = 0.f;
    if (m != -INFINITY) {  // a block past the row's end has nothing (exp(-inf - -inf) would be NaN)
#pragma unroll
        for (int i = 0; i < VECS; ++i) s += expf(v[i].x - m) + expf(v[i].y - m) + expf(v[i].z - m) + expf(v[i].w - m);
    }
    s = block_reduce(s, 1, sh);
    if (threadIdx.x == 0) {
        pair[0] = m;
        pair[1] = s;
    }
    cluster_sync();  // every block's pair is written
    float pm[CLUSTER], ps[CLUSTER], M = -INFINITY, S = 0.f;
#pragma unroll
    for (int r = 0; r < CLUSTER; ++r) {
        pm[r] = load_remote(&pair[0], r);
        ps[r] = load_remote(&pair[1], r);
        M = fmaxf(M, pm[r]);
    }
#pragma unroll
    for (int r = 0; r < CLUSTER; ++r)
        if (pm[r] != -INFINITY) S += ps[r] * expf(pm[r] - M);
    cluster_sync();  // no block leaves (freeing its shared memory) while another still reads it
    const float inv = 1.f / S;
#pragma unroll
    for (int i = 0; i < VECS; ++i) {
        const int j = base + i * blockDim.x;
        if (j < n4) __stcs(y4 + j, make_float4(expf(v[i].x - M) * inv, expf(v[i].y - M) * inv, expf(v[i].z - M) * inv, expf(v[i].w - M) * inv));
    }
}

// Step 3 (ours): one block per image, straight to the mean, in ONE kernel.
//
// The counts travel with the batch (an int per image), so a block reads only its image's valid
// boxes: no padding is read, no per-slot output is written, and no second pass re-reads B*M slots.
// Thread j of block b takes boxes j, j + blockDim, ... < counts[b] (16-byte float4 loads of each
// box), adds up 1 - GIoU, and the block reduces its sum (warp shuffles, then one shared-memory slot
// per warp) into partial[b], with the image's box count.
//
// The mean over ALL valid boxes needs every block's sum. Atomically adding floats into one word
// would be order-dependent (not deterministic run to run). Instead, the last-block pattern: each
// block stores its sum and box count, makes them visible (__threadfence), and takes a ticket with
// atomicAdd on a counter; the block that draws the last ticket knows every partial is written, sums
// the partials and the counts in a fixed order, writes loss = sum / max(count, 1), and resets the
// counter to 0 for the next launch. Same bits every run, whichever block finishes last.
//
// Launch: grid min(B, 4096), block a multiple of 32 (64 for the article's workload: most images
// hold a few boxes; a block loops when an image holds more boxes than threads). Up to 4096 images
// each block takes ONE image; past that, block k takes images k, k + grid, ... (the counter and the
// last block's sum would otherwise grow with B: 65536 tickets on one address serialise). Workspace:
// partial (2 x grid words: the sums, then the counts), done (one uint, zero before the first launch;
// the kernel leaves it zero). Limits: B < 2^31; giou_mean_f32 needs pred and target 16-byte aligned
// (the host checks and falls back to giou_mean_f32_any, scalar loads); counts are clamped to [0, M].
// Huge boxes: where a pair's largest width or height passes 2^16 the GIoU is computed in a frame
// scaled by a power of two (frame_scale), where no area, and no product of areas, overflows float32:
// every box with finite coordinates (|x| < 1.7e38) gets a finite loss and gradient. Below 2^16
// s = 1 and the arithmetic is the same.
#define EPS 1e-5f

struct Box {
    float x1, y1, x2, y2;
};

// frame_scale is 1 when m, the largest width or height of a pair of boxes (the enclosure's, or an
// inverted box's own), is at most 2^16, as for every image of ordinary size; past that it is the
// power of two that brings m under 2^16. GIoU is a ratio of areas, so it is the same in a frame
// scaled by s (exactly: s is a power of two) with the clamp eps scaled by s^2, and its gradient
// is s times the scaled frame's. Unscaled, a box at 1e20 has an area of 1e40, over float32's
// 3.4e38: Inf / Inf gave a NaN loss for a finite box. Coordinates must keep their
// differences finite (|x| < 1.7e38).
__device__ __forceinline__ float frame_scale(float m) {
    if (!(m > 65536.f) || isinf(m)) return 1.f;
    int e;
    frexpf(m, &e); // m = f 2^e, f in [0.5, 1)
    return ldexpf(1.f, 16 - e);
}

// giou of (p, t) in the frame scaled by frame_scale (the same as unscaled below 2^16).
__device__ __forceinline__ float giou(Box p, Box t) {
    float aw = p.x2 - p.x1, ah = p.y2 - p.y1, tw = t.x2 - t.x1, th = t.y2 - t.y1;
    float iw = fmaxf(fminf(p.x2, t.x2) - fmaxf(p.x1, t.x1), 0.f);
    float ih = fmaxf(fminf(p.y2, t.y2) - fmaxf(p.y1, t.y1), 0.f);
    float ew = fmaxf(fmaxf(p.x2, t.x2) - fminf(p.x1, t.x1), 0.f);
    float eh = fmaxf(fmaxf(p.y2, t.y2) - fminf(p.y1, t.y1), 0.f);
    const float s = frame_scale(fmaxf(fmaxf(fmaxf(fabsf(aw), fabsf(ah)), fmaxf(fabsf(tw), fabsf(th))), fmaxf(ew, eh)));
    const float eps = fmaxf(EPS * s * s, 1e-38f); // EPS when s = 1
    aw *= s, ah *= s, tw *= s, th *= s, iw *= s, ih *= s, ew *= s, eh *= s;
    const float a1 = aw * ah;
    const float a2 = tw * th;
    const float inter = iw * ih;
    const float uni = a1 + a2 - inter;
    const float enc = ew * eh;
    return inter / fmaxf(uni, eps) - (enc - uni) / fmaxf(enc, eps);
}

template <bool VEC>
__device__ __forceinline__ Box load_box(const float *b, long long i) {
    if (VEC) {
        const float4 v = reinterpret_cast<const float4 *>(b)[i];
        return Box{v.x, v.y, v.z, v.w};
    }
    return Box{b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]};
}

// Sum of v over the block, valid in thread 0: a fixed tree (shuffles within each warp, then warp 0
// over one shared slot per warp), so the same inputs give the same bits. The leading barrier lets a
// caller reuse sh right after a previous call.
template <typename T>
__device__ __forceinline__ T block_sum(T v, T *sh) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < (blockDim.x >> 5) ? sh[threadIdx.x] : T(0);
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    return v;
}

// Last-block finish, called by every block with its sum and its box count (thread 0's). partial
// holds 2*gridDim.x words: the blocks' float sums, then their counts as unsigned ints.
__device__ __forceinline__ void finish_mean(float block_total, unsigned int block_count, float *partial, unsigned int *done,
                                            float *loss, float *sh) {
    __shared__ bool last;
    __shared__ long long shc[32];
    const unsigned int G = gridDim.x;
    unsigned int *pcount = reinterpret_cast<unsigned int *>(partial + G);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = block_total;
        pcount[blockIdx.x] = block_count;
        __threadfence();  // both are visible device-wide before the ticket is taken
        last = atomicAdd(done, 1u) == G - 1;
    }
    __syncthreads();
    if (!last) return;
    float s = 0.f;
    long long c = 0;
    for (unsigned int i = threadIdx.x; i < G; i += blockDim.x) {
        s += __ldcg(partial + i);  // from L2: written by other blocks
        c += __ldcg(pcount + i);
    }
    s = block_sum(s, sh);
    c = block_sum(c, shc);
    if (threadIdx.x == 0) {
        loss[0] = c > 0 ? s / (float)c : 0.f;
        *done = 0u;  // ready for the next launch
    }
}

template <bool VEC>
__device__ __forceinline__ void mean_kernel(const float *__restrict__ pred, const float *__restrict__ target,
                                            const int *__restrict__ counts, float *partial, unsigned int *done,
                                            float *loss, int B, int M) {
    __shared__ float sh[32];
    float s = 0.f;
    unsigned int cnt = 0;
    for (int b = blockIdx.x; b < B; b += gridDim.x) {  // one image per block unless B > the grid
        const int n = min(max(counts[b], 0), M);
        const long long base = (long long)b * M;
        cnt += n;
        for (int j = threadIdx.x; j < n; j += blockDim.x) s += 1.f - giou(load_box<VEC>(pred, base + j), load_box<VEC>(target, base + j));
    }
    s = block_sum(s, sh);
    finish_mean(s, cnt, partial, done, loss, sh);
}

extern "C" __global__ void giou_mean_f32(const float *__restrict__ pred, const float *__restrict__ target, const int *__restrict__ counts,
                                         float *partial, unsigned int *done, float *loss, int B, int M) {
    mean_kernel<true>(pred, target, counts, partial, done, loss, B, M);
}

extern "C" __global__ void giou_mean_f32_any(const float *__restrict__ pred, const float *__restrict__ target, const int *__restrict__ counts,
                                             float *partial, unsigned int *done, float *loss, int B, int M) {
    mean_kernel<false>(pred, target, counts, partial, done, loss, B, M);
}

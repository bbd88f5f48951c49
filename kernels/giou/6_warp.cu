// Step 6 (ours): one WARP per image, eight images per block, for the loss and for the fused
// forward + backward.
//
// Steps 3 and 5 give each image a block of 64 threads, and each block takes a ticket on the same
// counter for the last-block mean. Those atomics on one address are serialised, a few nanoseconds
// each: at the article's 1024 images they are a visible share of a 10 us kernel, and the sweep shows
// them growing with B. With about two boxes per image, a warp (32 lanes) has room to spare per
// image, so here warp w of block k takes image 8k + w (then every 8*grid-th image): lanes stride
// over the image's boxes, the warp reduces with shuffles, the block adds its eight warp sums in a
// fixed order, and ONE ticket is taken per eight images. Same last-block finish, same bits every run.
//
// Launch: block 256 (8 warps), grid min(ceil(B/8), 4096); partial 2 x grid words, done as step 3.
// giou_warp_f32 is step 3's loss, giou_warp_train_f32 step 5's loss and gradient (padded slots get
// a zero gradient; inv_total = 1/max(N, 1) from the host). Limits: the vector kernels need 16-byte
// aligned pred, target (and dpred); the _any kernels take any alignment.
#define EPS 1e-5f

struct Box {
    float x1, y1, x2, y2;
};

// GIoU of (p, t) and its gradient with respect to p.
__device__ __forceinline__ float giou_grad(Box p, Box t, Box &d) {
    const float aw = p.x2 - p.x1, ah = p.y2 - p.y1;
    const float a1 = aw * ah, a2 = (t.x2 - t.x1) * (t.y2 - t.y1);
    const bool lx = p.x1 >= t.x1, ly = p.y1 >= t.y1, rx = p.x2 <= t.x2, ry = p.y2 <= t.y2;  // pred wins the intersection's max/min
    const float iw0 = (rx ? p.x2 : t.x2) - (lx ? p.x1 : t.x1);
    const float ih0 = (ry ? p.y2 : t.y2) - (ly ? p.y1 : t.y1);
    const float iw = fmaxf(iw0, 0.f), ih = fmaxf(ih0, 0.f);
    const float inter = iw * ih;
    const float uni = a1 + a2 - inter;
    const float uc = fmaxf(uni, EPS);
    const bool ex1 = p.x1 <= t.x1, ey1 = p.y1 <= t.y1, ex2 = p.x2 >= t.x2, ey2 = p.y2 >= t.y2;  // pred wins the enclosure's min/max
    const float ew0 = (ex2 ? p.x2 : t.x2) - (ex1 ? p.x1 : t.x1);
    const float eh0 = (ey2 ? p.y2 : t.y2) - (ey1 ? p.y1 : t.y1);
    const float ew = fmaxf(ew0, 0.f), eh = fmaxf(eh0, 0.f);
    const float enc = ew * eh;
    const float ec = fmaxf(enc, EPS);
    const float g = inter / uc - (enc - uni) / ec;

    const float dU = (uni > EPS ? -inter / (uc * uc) : 0.f) + 1.f / ec;
    const float dI = 1.f / uc - dU;
    const float dE = -(1.f / ec - (enc > EPS ? (enc - uni) / (ec * ec) : 0.f));
    const float giw = iw0 > 0.f ? dI * ih : 0.f, gih = ih0 > 0.f ? dI * iw : 0.f;
    const float gew = ew0 > 0.f ? dE * eh : 0.f, geh = eh0 > 0.f ? dE * ew : 0.f;
    d.x1 = -ah * dU - (lx ? giw : 0.f) - (ex1 ? gew : 0.f);
    d.x2 = ah * dU + (rx ? giw : 0.f) + (ex2 ? gew : 0.f);
    d.y1 = -aw * dU - (ly ? gih : 0.f) - (ey1 ? geh : 0.f);
    d.y2 = aw * dU + (ry ? gih : 0.f) + (ey2 ? geh : 0.f);
    return g;
}

template <bool VEC>
__device__ __forceinline__ Box load_box(const float *b, long long i) {
    if (VEC) {
        const float4 v = reinterpret_cast<const float4 *>(b)[i];
        return Box{v.x, v.y, v.z, v.w};
    }
    return Box{b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]};
}

template <bool VEC>
__device__ __forceinline__ void store_box(float *b, long long i, Box v) {
    if (VEC) {
        reinterpret_cast<float4 *>(b)[i] = make_float4(v.x1, v.y1, v.x2, v.y2);
    } else {
        b[4 * i] = v.x1, b[4 * i + 1] = v.y1, b[4 * i + 2] = v.x2, b[4 * i + 3] = v.y2;
    }
}

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

template <bool VEC, bool TRAIN>
__device__ __forceinline__ void warp_kernel(const float *__restrict__ pred, const float *__restrict__ target, const int *__restrict__ counts,
                                            float *partial, unsigned int *done, float *loss, float *__restrict__ dpred, int B, int M,
                                            float inv_total) {
    __shared__ float wsum[32], sh[32];
    __shared__ unsigned int wcnt[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, W = blockDim.x >> 5;
    float s = 0.f;
    unsigned int cnt = 0;
    for (long long b = (long long)blockIdx.x * W + warp; b < B; b += (long long)gridDim.x * W) {
        const int n = min(max(counts[b], 0), M);
        const long long base = b * M;
        cnt += n;
        if (TRAIN) {
            for (int j = lane; j < M; j += 32) {
                Box d{0.f, 0.f, 0.f, 0.f};
                if (j < n) {
                    s += 1.f - giou_grad(load_box<VEC>(pred, base + j), load_box<VEC>(target, base + j), d);
                    d.x1 *= -inv_total, d.y1 *= -inv_total, d.x2 *= -inv_total, d.y2 *= -inv_total;
                }
                store_box<VEC>(dpred, base + j, d);
            }
        } else {
            Box d;
            for (int j = lane; j < n; j += 32) s += 1.f - giou_grad(load_box<VEC>(pred, base + j), load_box<VEC>(target, base + j), d);
        }
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) {
        wsum[warp] = s;
        wcnt[warp] = cnt;
    }
    __syncthreads();
    float total = 0.f;
    unsigned int count = 0;
    if (threadIdx.x == 0) {
        for (int w = 0; w < W; ++w) {  // fixed order: deterministic
            total += wsum[w];
            count += wcnt[w];
        }
    }
    finish_mean(total, count, partial, done, loss, sh);
}

extern "C" __global__ void giou_warp_f32(const float *__restrict__ pred, const float *__restrict__ target, const int *__restrict__ counts,
                                         float *partial, unsigned int *done, float *loss, int B, int M) {
    warp_kernel<true, false>(pred, target, counts, partial, done, loss, nullptr, B, M, 0.f);
}

extern "C" __global__ void giou_warp_f32_any(const float *__restrict__ pred, const float *__restrict__ target, const int *__restrict__ counts,
                                             float *partial, unsigned int *done, float *loss, int B, int M) {
    warp_kernel<false, false>(pred, target, counts, partial, done, loss, nullptr, B, M, 0.f);
}

extern "C" __global__ void giou_warp_train_f32(const float *__restrict__ pred, const float *__restrict__ target, const int *__restrict__ counts,
                                               float *partial, unsigned int *done, float *loss, float *__restrict__ dpred, int B, int M,
                                               float inv_total) {
    warp_kernel<true, true>(pred, target, counts, partial, done, loss, dpred, B, M, inv_total);
}

extern "C" __global__ void giou_warp_train_f32_any(const float *__restrict__ pred, const float *__restrict__ target, const int *__restrict__ counts,
                                                   float *partial, unsigned int *done, float *loss, float *__restrict__ dpred, int B, int M,
                                                   float inv_total) {
    warp_kernel<false, true>(pred, target, counts, partial, done, loss, dpred, B, M, inv_total);
}

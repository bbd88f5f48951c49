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
// Huge boxes: where a pair's largest width or height passes 2^16 the GIoU is computed in a frame
// scaled by a power of two (frame_scale), where no area, and no product of areas, overflows float32:
// every box with finite coordinates (|x| < 1.7e38) gets a finite loss and gradient. Below 2^16
// s = 1; only the order of two divisions changed (I/Uc/Uc for I/Uc^2, which underflows when scaled).
#define EPS 1e-5f

struct Box {
    float x1, y1, x2, y2;
};

// GIoU of (p, t) and its gradient with respect to p.
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

// giou_grad works in the frame scaled by frame_scale (unscaled below 2^16) and scales d back.
__device__ __forceinline__ float giou_grad(Box p, Box t, Box &d) {
    const bool lx = p.x1 >= t.x1, ly = p.y1 >= t.y1, rx = p.x2 <= t.x2, ry = p.y2 <= t.y2;  // pred wins the intersection's max/min
    const bool ex1 = p.x1 <= t.x1, ey1 = p.y1 <= t.y1, ex2 = p.x2 >= t.x2, ey2 = p.y2 >= t.y2;  // pred wins the enclosure's min/max
    float aw = p.x2 - p.x1, ah = p.y2 - p.y1, tw = t.x2 - t.x1, th = t.y2 - t.y1;
    float iw0 = (rx ? p.x2 : t.x2) - (lx ? p.x1 : t.x1);
    float ih0 = (ry ? p.y2 : t.y2) - (ly ? p.y1 : t.y1);
    float ew0 = (ex2 ? p.x2 : t.x2) - (ex1 ? p.x1 : t.x1);
    float eh0 = (ey2 ? p.y2 : t.y2) - (ey1 ? p.y1 : t.y1);
    const float s = frame_scale(fmaxf(fmaxf(fmaxf(fabsf(aw), fabsf(ah)), fmaxf(fabsf(tw), fabsf(th))), fmaxf(ew0, eh0)));
    const float eps = fmaxf(EPS * s * s, 1e-38f); // EPS when s = 1
    aw *= s, ah *= s, tw *= s, th *= s, iw0 *= s, ih0 *= s, ew0 *= s, eh0 *= s;
    const float a1 = aw * ah, a2 = tw * th;
    const float iw = fmaxf(iw0, 0.f), ih = fmaxf(ih0, 0.f);
    const float inter = iw * ih;
    const float uni = a1 + a2 - inter;
    const float uc = fmaxf(uni, eps);
    const float ew = fmaxf(ew0, 0.f), eh = fmaxf(eh0, 0.f);
    const float enc = ew * eh;
    const float ec = fmaxf(enc, eps);
    const float g = inter / uc - (enc - uni) / ec;

    // The derivatives by the union U, the intersection I and the enclosure E, each multiplied by the
    // side it scales before anything is divided twice: dL/dE * eh is (q - 1) * (eh / ec), never
    // (q - 1) / ec * eh, whose 1 / ec^2 overflows float32 for an inverted box whose union is far
    // below zero (a box at 1e20 with a height of 6: q near 2.5e18, ec near 1e-29 in the scaled frame).
    const float pu = uni > eps ? inter / uc : 0.f;        // I / U
    const float q = enc > eps ? (enc - uni) / ec : 0.f;   // (E - U) / E
    const float dUh = (uni > eps ? -pu * (ah / uc) : 0.f) + ah / ec;  // dG/dU * ah
    const float dUw = (uni > eps ? -pu * (aw / uc) : 0.f) + aw / ec;  // dG/dU * aw
    const float giw = iw0 > 0.f ? (1.f + pu) * (ih / uc) - ih / ec : 0.f;  // dG/dI * ih
    const float gih = ih0 > 0.f ? (1.f + pu) * (iw / uc) - iw / ec : 0.f;  // dG/dI * iw
    const float gew = ew0 > 0.f ? (q - 1.f) * (eh / ec) : 0.f;             // dG/dE * eh
    const float geh = eh0 > 0.f ? (q - 1.f) * (ew / ec) : 0.f;             // dG/dE * ew
    d.x1 = s * (-dUh - (lx ? giw : 0.f) - (ex1 ? gew : 0.f));
    d.x2 = s * (dUh + (rx ? giw : 0.f) + (ex2 ? gew : 0.f));
    d.y1 = s * (-dUw - (ly ? gih : 0.f) - (ey1 ? geh : 0.f));
    d.y2 = s * (dUw + (ry ? gih : 0.f) + (ey2 ? geh : 0.f));
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

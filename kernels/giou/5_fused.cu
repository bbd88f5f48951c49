// Step 5 (ours, beyond the article): forward and backward in one kernel.
//
// For L = mean over the valid boxes of (1 - GIoU(p, t)), each box's gradient is local:
// dL/dp = -(1/N) dGIoU/dp, with N the number of valid boxes. The kernel computes GIoU once per box,
// keeps every intermediate in registers (areas, the intersection, the union, the enclosing box and
// which input won each min/max), and writes the loss (step 3's block sum and last-block mean) and
// the gradient of every predicted box in the same pass. Padded slots (j >= counts[b]) get a zero
// gradient, so dpred is fully written: (B, M, 4), like pred.
//
// The chain rule, with G = I/Uc - (E - U)/Ec, Uc = max(U, eps), Ec = max(E, eps):
//   dG/dU (direct) = -I/Uc^2 [U > eps] + 1/Ec,   dG/dI = 1/Uc - dG/dU (U = a1 + a2 - I),
//   dG/da1 = dG/dU,   dG/dE = -(1/Ec - (E - U)/Ec^2 [E > eps]),
// then I = iw*ih and E = ew*eh (a clamp at 0 passes nothing), and each min/max routes its gradient to
// the input that won it; on a tie the predicted box wins (so identical boxes get a zero gradient).
//
// N is needed before the first gradient is written, so it is an argument (inv_total = 1/max(N, 1)):
// the batch builder counted the boxes on the host. A device-only count would cost a second pass.
//
// Launch: step 3's (grid min(B, 4096), block a multiple of 32; partial 2 x grid words). Limits: giou_train_f32 needs 16-byte aligned
// pred, target and dpred (else giou_train_f32_any). giou_scale_grad (for an upstream gradient g != 1)
// multiplies n floats by the scalar *g: grid-stride, any n.
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

template <bool VEC>
__device__ __forceinline__ void train_kernel(const float *__restrict__ pred, const float *__restrict__ target, const int *__restrict__ counts,
                                             float *partial, unsigned int *done, float *loss, float *__restrict__ dpred, int B, int M,
                                             float inv_total) {
    __shared__ float sh[32];
    float s = 0.f;
    unsigned int cnt = 0;
    for (int b = blockIdx.x; b < B; b += gridDim.x) {
        const int n = min(max(counts[b], 0), M);
        const long long base = (long long)b * M;
        cnt += n;
        for (int j = threadIdx.x; j < M; j += blockDim.x) {
            Box d{0.f, 0.f, 0.f, 0.f};
            if (j < n) {
                s += 1.f - giou_grad(load_box<VEC>(pred, base + j), load_box<VEC>(target, base + j), d);
                d.x1 *= -inv_total, d.y1 *= -inv_total, d.x2 *= -inv_total, d.y2 *= -inv_total;
            }
            store_box<VEC>(dpred, base + j, d);
        }
    }
    s = block_sum(s, sh);
    finish_mean(s, cnt, partial, done, loss, sh);
}

extern "C" __global__ void giou_train_f32(const float *__restrict__ pred, const float *__restrict__ target, const int *__restrict__ counts,
                                          float *partial, unsigned int *done, float *loss, float *__restrict__ dpred, int B, int M,
                                          float inv_total) {
    train_kernel<true>(pred, target, counts, partial, done, loss, dpred, B, M, inv_total);
}

extern "C" __global__ void giou_train_f32_any(const float *__restrict__ pred, const float *__restrict__ target, const int *__restrict__ counts,
                                              float *partial, unsigned int *done, float *loss, float *__restrict__ dpred, int B, int M,
                                              float inv_total) {
    train_kernel<false>(pred, target, counts, partial, done, loss, dpred, B, M, inv_total);
}

extern "C" __global__ void giou_scale_grad(const float *__restrict__ src, const float *__restrict__ g, float *__restrict__ dst, long long n) {
    const float s = *g;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) dst[i] = src[i] * s;
}

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

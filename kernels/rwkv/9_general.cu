// The general forward: not a rung of the ladder but the fallback of the op (backward_autograd.go)
// for shapes every faster step refuses (T over v5's shared memory, for one). It takes any valid
// shape: B, C and T of any size, as long as B*C*T fits the 32-bit index.
// What it keeps from the ladder: shared memory (v1) and a block of NT outputs of one row; what it
// gives up: register tiles and batch groups, which need T or B to be multiples of a tile.
// How: block (x = row b*C + c, y = chunk of NT outputs t0 .. t0+NT-1). For each chunk of NT inputs
// u0 .. u0+NT-1 up to the diagonal, the block stages k[u0 ..] and the 2*NT w values the chunk pair
// touches, w[c][(T-1)-t+u], in shared memory, and thread tl = t - t0 adds its products:
// ws[NT-1-tl+i] * ks[i] for u = u0 + i <= t. Values outside the row are staged as zeros.
// Launch: grid (B*C, ceil(T/NT)), block NT = 256. Limits: B*C*T < 2^31, ceil(T/256) <= 65535.
#define NT 256

// conv_chunk is out[t] = eps + sum_{u<=t} wrow[(T-1)-t+u] * kval(u) for the block's NT outputs,
// where kval(u) = kr[rev ? T-1-u : u]; the result of thread tl is returned (0 for t >= T). The
// backward uses it twice (general_bwd below): once on reversed time, once with g as the filter.
__device__ __forceinline__ float conv_chunk(const float *__restrict__ wrow, const float *__restrict__ kr,
                                            bool rev, float eps, int T, int t0, float *ws, float *ks) {
    const int tl = threadIdx.x;
    const int t = t0 + tl;
    float s = eps;
    for (int u0 = 0; u0 <= t0; u0 += NT) {
        const int u = u0 + tl;
        ks[tl] = u < T ? kr[rev ? T - 1 - u : u] : 0.f;
        const int jb = T - t0 - NT + u0;  // w index of ws[0]
        for (int i = tl; i < 2 * NT; i += NT) {
            const int j = jb + i;
            ws[i] = (j >= 0 && j < T) ? wrow[j] : 0.f;
        }
        __syncthreads();
        const int last = (u0 < t0) ? NT - 1 : tl;  // the diagonal chunk stops at u = t
#pragma unroll 8
        for (int i = 0; i <= last; ++i) s += ws[NT - 1 - tl + i] * ks[i];
        __syncthreads();  // the next chunk overwrites ws and ks
    }
    return t < T ? s : 0.f;
}

extern "C" __global__ void rwkv_fwd_general(const float *__restrict__ w, const float *__restrict__ k,
                                            float *__restrict__ out, float eps, int B, int C, int T) {
    __shared__ float ws[2 * NT];
    __shared__ float ks[NT];
    const int row = blockIdx.x;
    const int t0 = blockIdx.y * NT;
    const int c = row % C;
    const float s = conv_chunk(w + (long long)c * T, k + (long long)row * T, false, eps, T, t0, ws, ks);
    const int t = t0 + threadIdx.x;
    if (t < T) out[(long long)row * T + t] = s;
}

// The general backward. With g = dL/dout, both gradients are the same chunked product:
//   dk[t]    = sum_{x>=t} g[x] w[(T-1)-(x-t)]: on reversed time t' = T-1-t it is the forward
//              with k'(u') = g[T-1-u'], written to dk[T-1-t'];
//   dwrow[j] = sum_{x>=s} g[x] k[x-s], s = (T-1)-j: with i = x-s, sum_{i<=j} g[(T-1)-j+i] k[i],
//              the forward with the g row in the place of the filter and no eps.
// blockIdx.z picks which one the block computes. dw is written per (b, c) row (B partial slices)
// and rwkv_bwd_reduce sums them over b in order, as in the ladder: deterministic.
// Launch: grid (B*C, ceil(T/NT), 2), block NT; then the reduce. Limits as the forward's.
extern "C" __global__ void rwkv_bwd_general(const float *__restrict__ w, const float *__restrict__ k,
                                            const float *__restrict__ g, float *__restrict__ dk,
                                            float *__restrict__ dwrow, int B, int C, int T) {
    __shared__ float ws[2 * NT];
    __shared__ float ks[NT];
    const int row = blockIdx.x;
    const int t0 = blockIdx.y * NT;
    const int c = row % C;
    const long long base = (long long)row * T;
    const int t = t0 + threadIdx.x;
    if (blockIdx.z == 0) {
        const float s = conv_chunk(w + (long long)c * T, g + base, true, 0.f, T, t0, ws, ks);
        if (t < T) dk[base + (T - 1 - t)] = s;
    } else {
        const float s = conv_chunk(g + base, k + base, false, 0.f, T, t0, ws, ks);
        if (t < T) dwrow[base + t] = s;
    }
}

// dw[i] = sum over the G partial slices part[p*n + i], in order: deterministic.
extern "C" __global__ void rwkv_bwd_reduce(const float *__restrict__ part, float *__restrict__ dw, int G, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.f;
    for (int p = 0; p < G; ++p) s += part[(long long)p * n + i];
    dw[i] = s;
}

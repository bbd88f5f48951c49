// Softmax backward: dx from the forward's output y and the incoming gradient dy.
//
// The maths: y = softmax(x) over a row, so dy_j/dx_i = y_j (delta_ij - y_i), and
//     dx_i = sum_j dy_j y_j (delta_ij - y_i) = y_i (dy_i - dot),   dot = sum_j dy_j y_j.
// The backward needs y (the forward keeps it), not x, and one number per row: the dot product.
// That is a row reduction followed by an elementwise pass, so it has the forward's shape of work,
// and this file uses step 9's layout for every row length: a row cut into chunks of chunk4
// float4s, one block each, in two launches:
//   1. softmax_bwd_dot: each block adds dy * y over its chunk and writes the partial sum to
//      part[row * chunks + chunk];
//   2. softmax_bwd_dx: each block adds its row's partial sums (in chunk order, so the result does
//      not depend on scheduling) and writes dx = y * (dy - dot) over its chunk.
// Heads and tails as in step 9: the 0-3 floats before a row's first 16-byte boundary go to the
// first threads of chunk 0, the 0-3 after its last float4 to threads 32.. of the last chunk.
// Traffic: y and dy twice (the second time often from L2), dx once.
// Launch: both kernels on grid rows * chunks, block 512; part holds rows * chunks floats.
// Limits: any cols >= 1; vec = 1 only when y, dy and dx are equally aligned modulo 16 bytes.
#define THREADS 512
#define WARPS (THREADS / 32)

__device__ float block_sum(float v, float *sh) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = lane < WARPS ? sh[lane] : 0.f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ float4 load4(const float *p, int vec) {
    if (vec) return *reinterpret_cast<const float4 *>(p);
    return make_float4(p[0], p[1], p[2], p[3]);
}

// Where block b works (step 9's Part): its row, chunk, the row's head and float4 count, its range
// of float4s, and the one head or tail float this thread holds (-1: none).
struct Part {
    long long row;
    int chunk, head, n4, begin, end, extra;
};
__device__ Part part_of(const float *y, int cols, int chunks, int chunk4, int vec) {
    Part p;
    p.row = blockIdx.x / chunks;
    p.chunk = blockIdx.x % chunks;
    const float *yr = y + p.row * cols;
    p.head = vec ? min(cols, (int)(((16 - ((unsigned long long)yr & 15)) & 15) / 4)) : 0;
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
softmax_bwd_dot(const float *__restrict__ y, const float *__restrict__ dy, float *__restrict__ part, int rows, int cols, int chunks, int chunk4, int vec) {
    __shared__ float sh[WARPS];
    const Part w = part_of(y, cols, chunks, chunk4, vec);
    const float *yr = y + w.row * cols, *gr = dy + w.row * cols;
    float s = w.extra >= 0 ? yr[w.extra] * gr[w.extra] : 0.f;
    for (int j = w.begin + threadIdx.x; j < w.end; j += THREADS) {
        const float4 a = load4(yr + w.head + 4 * j, vec), g = load4(gr + w.head + 4 * j, vec);
        s += a.x * g.x + a.y * g.y + a.z * g.z + a.w * g.w;
    }
    s = block_sum(s, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_bwd_dx(const float *__restrict__ y, const float *__restrict__ dy, const float *__restrict__ part, float *__restrict__ dx,
               int rows, int cols, int chunks, int chunk4, int vec) {
    __shared__ float dot;
    const Part w = part_of(y, cols, chunks, chunk4, vec);
    if (threadIdx.x == 0) {  // in chunk order: the same dot in every block of the row, every run
        float s = 0.f;
        for (int c = 0; c < chunks; ++c) s += part[w.row * chunks + c];
        dot = s;
    }
    __syncthreads();
    const float d = dot;
    const float *yr = y + w.row * cols, *gr = dy + w.row * cols;
    float *xr = dx + w.row * cols;
    if (w.extra >= 0) xr[w.extra] = yr[w.extra] * (gr[w.extra] - d);
    for (int j = w.begin + threadIdx.x; j < w.end; j += THREADS) {
        const float4 a = load4(yr + w.head + 4 * j, vec), g = load4(gr + w.head + 4 * j, vec);
        const float4 r = make_float4(a.x * (g.x - d), a.y * (g.y - d), a.z * (g.z - d), a.w * (g.w - d));
        if (vec) {
            *reinterpret_cast<float4 *>(xr + w.head + 4 * j) = r;
        } else {
            xr[w.head + 4 * j] = r.x;
            xr[w.head + 4 * j + 1] = r.y;
            xr[w.head + 4 * j + 2] = r.z;
            xr[w.head + 4 * j + 3] = r.w;
        }
    }
}

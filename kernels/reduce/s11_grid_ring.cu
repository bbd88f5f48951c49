// Softmax step 11: long rows held by teams of resident blocks, each walking a ring of rows.
//
// What changed from step 8: a cluster holds at most 16 SMs' share of a row, and only 7 clusters of
// 16 fit an H100 at once. A row of 1,048,576 floats (4 MB) fills a 16-block cluster, so each SM
// holds one row's slice: it reads it, waits for the cluster, writes it, and only then reads the
// next. An SM's reads and writes never overlap, 20 SMs idle, and step 8 stays near 60% of the
// copy bandwidth there.
// Here every SM runs one block and the blocks form teams of g, with no clusters. A team holds a
// row cut in g slices (sized from the GPU: 48 KB on an H100, 64 KB on an H200), one per block, and
// each block keeps a ring of SLOTS slices in its shared memory:
//   - the next AHEAD = SLOTS - LAG rows' slices are always in flight (cp.async), so the reads never
//     stop while the block works;
//   - when a slice lands, each thread finds the max m of its own elements, keeps exp(x - m) in
//     place of x (the only exp of an element, as step 4's online pair has it), and the block
//     publishes its (max, sum) pair to the team in global memory;
//   - LAG rows later, when the team's pairs are long published, the block merges them into the
//     row's (M, S), and each thread writes y = its kept exp(x - m) * exp(m - M) / S. The freed slot
//     takes the row AHEAD rows on.
// So x is read once and y written once, and an SM's reads of later rows overlap its writes.
// What the lesson measured: a row costs every block a few microseconds whatever its slice (merging
// the pairs, the block's own barriers), so slices must be large. Teams of all 132 blocks, with
// slices of 7-31 KB, stay at 16-72% of the copy bandwidth on an H100; slices near 48 KB in rings
// of 4 reach 89-94%. A slice must take about 1.9 microseconds of the SM's share of the DRAM
// bandwidth, so a GPU with more bandwidth per SM needs larger slices (64 KB on an H200), and the
// plan sizes the teams for them (but at least 2 teams: rows of a million floats then take 62-64 KB
// slices in rings of 3).
// No barrier and no fence: a pair is one 16-byte word, (max, row) and (sum, row), each 8-byte half
// written whole, so a reader that sees the right row number in both halves sees the pair. The
// team's mailbox is a ring of RING rows of g words, zeroed before the launch: a block publishes row
// k + RING only after it merged row k + RING - LAG, which needs every block's pair of that row,
// published after each block merged row k (RING > 2 LAG).
// Masked rows (-inf entries): a thread whose elements are all -inf has max -inf, and
// exp(-inf - -inf) is NaN. It takes its exponents against 0 instead (exp(-inf - 0) = 0), keeps
// zeros, publishes (-inf, 0), and scales by 0 / S: 0 when the row has a finite entry, NaN when the
// row is all -inf (S = 0), as in PyTorch. A NaN entry keeps its pair's sum NaN through every merge
// (two empty pairs add their sums), so the row is NaN.
// This is only safe when every block is resident at once: the launch asks for at most one block
// per SM, and the driver must confirm that one fits. A block that waits more than about a second
// (another process holding SMs) sets *failed and leaves instead of hanging the GPU; the host
// reports it.
// Log-softmax (defined LOG_SOFTMAX): the slot keeps x itself (the exps are only summed), and the
// write emits x - (M + log(S)); the same single read (KernelBench level 1 problem 24 runs it).
// Heads and tails as in step 8: the 0-3 floats before a row's first 16-byte boundary and after its
// last float4 go to the first threads of each team's block 0, which keep them next to the slot.
// Launch: grid teams * g <= the SM count, block THREADS (at least 32 per 32 blocks of a team),
// dynamic shared memory SLOTS * part4 * 16 bytes, part4 = ceil(floor(cols / 4) / g) float4s per
// block and ELEMS = ceil(part4 / THREADS) per thread; box holds teams * RING * g 16-byte words,
// zeroed. Compiled with -DSLOTS=s -DLAG=l -DELEMS=e -DTHREADS=t.
// Limits: cols < 2^31; two slices fit a block's shared memory; vec = 1 only when x and y are
// equally aligned modulo 16 bytes.
// Needs: compute capability 8.0 (cp.async).
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)  // NVRTC has no <math.h>: +infinity from its bits
#endif
#ifndef THREADS
#define THREADS 256
#endif
#define WARPS (THREADS / 32)
#ifndef SLOTS
#define SLOTS 4
#endif
#ifndef LAG
#define LAG 2
#endif
#define AHEAD (SLOTS - LAG)
#define RING (2 * LAG + 2)
#ifndef ELEMS
#define ELEMS 8
#endif

struct MS {
    float m, s;
};
// merge combines two (max, sum of exp(x - max)) pairs into the pair of their union (step 4's).
__device__ MS merge(MS a, MS b) {
    const float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return MS{m, a.s + b.s};  // both empty: 0, or NaN after a NaN entry
    return MS{m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}
__device__ MS warp_merge(MS v) {
    for (int o = 16; o > 0; o >>= 1) v = merge(v, MS{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)});
    return v;
}

// Where one row's data lie for this block: the row's head (floats before its first 16-byte
// boundary), its float4 body, this block's range of that body, and the head or tail float this
// thread keeps (-1: none).
struct Row {
    const float *x;
    float *y;
    int head, n4, begin, count, extra;
};
__device__ Row row_of(const float *x, float *y, long long row, int cols, int vec, int rank, int part4) {
    Row r;
    r.x = x + row * cols;
    r.y = y + row * cols;
    r.head = vec ? min(cols, (int)(((16 - ((unsigned long long)r.x & 15)) & 15) / 4)) : 0;
    r.n4 = (cols - r.head) / 4;
    const int tail = cols - r.head - 4 * r.n4;
    r.begin = min(rank * part4, r.n4);
    r.count = min(r.begin + part4, r.n4) - r.begin;
    r.extra = -1;
    if (rank == 0 && (int)threadIdx.x < r.head + tail)
        r.extra = threadIdx.x < r.head ? threadIdx.x : r.head + 4 * r.n4 + (threadIdx.x - r.head);
    return r;
}

__device__ void copy16(float4 *dst, const float *src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src) : "memory");
}
__device__ void commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most AHEAD - 1 of this thread's copy groups are in flight: the oldest has landed.
__device__ void wait_oldest() { asm volatile("cp.async.wait_group %0;" ::"n"(AHEAD - 1) : "memory"); }

// The mailbox word: the pair, each half next to the row's number (k + 1: a zeroed word is no row).
__device__ void publish(ulonglong2 *p, MS v, unsigned row) {
    const unsigned long long a = ((unsigned long long)row << 32) | __float_as_uint(v.m);
    const unsigned long long b = ((unsigned long long)row << 32) | __float_as_uint(v.s);
    asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}
__device__ ulonglong2 peek(const ulonglong2 *p) {
    ulonglong2 v;
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(p) : "memory");
    return v;
}

// Starts the copy of a row's slice into a slot (when the body is not 16-byte aligned, x and y at
// different offsets, it loads through registers), and loads this thread's head or tail float.
__device__ void fetch(const Row &r, float4 *slot, float *keep) {
    const float *xb = r.x + r.head + 4 * r.begin;
    const bool aligned = ((unsigned long long)xb & 15) == 0;
    for (int i = threadIdx.x; i < r.count; i += THREADS) {
        if (aligned)
            copy16(slot + i, xb + 4 * i);
        else
            slot[i] = make_float4(__ldcs(xb + 4 * i), __ldcs(xb + 4 * i + 1), __ldcs(xb + 4 * i + 2), __ldcs(xb + 4 * i + 3));
    }
    if (r.extra >= 0) keep[threadIdx.x] = __ldcs(r.x + r.extra);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
softmax_grid_ring(const float *__restrict__ x, float *__restrict__ y, int rows, int cols, int vec, int g, int part4, ulonglong2 *box,
                  unsigned int *failed) {
    extern __shared__ float4 slots[];      // SLOTS slices of part4 float4s
    __shared__ MS part[2][WARPS];          // per-warp pairs of this block's slice, by row parity
    __shared__ MS gathered[32];            // per-warp pairs of the team's blocks
#ifndef LOG_SOFTMAX
    __shared__ float own[SLOTS][THREADS];  // each thread's max of its elements, per slot
#endif
    __shared__ float keep[SLOTS][8];       // head and tail floats (threads 0..5 of rank 0)
    __shared__ unsigned gave_up;
    const int team = blockIdx.x / g, rank = blockIdx.x % g, teams = gridDim.x / g;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (team >= teams) return;  // a grid not a multiple of g: the spare blocks have nothing to do
    const long long mine = rows > team ? (rows - 1 - team) / teams + 1 : 0;  // rows team, team + teams, ...
    ulonglong2 *mail = box + (long long)team * RING * g;
    if (threadIdx.x == 0) gave_up = 0u;

    for (int k = 0; k < AHEAD; ++k) {  // the first AHEAD rows' slices in flight
        if (k < mine) fetch(row_of(x, y, team + (long long)k * teams, cols, vec, rank, part4), slots + (k % SLOTS) * part4, keep[k % SLOTS]);
        commit();
    }
    for (long long k = 0; k < mine + LAG; ++k) {
        const long long j = k - LAG;  // the row this iteration writes
        // The team's pairs of row j: their loads go out now and land while the block works on row
        // k (warp w reads the pairs of blocks 32w .. 32w + 31).
        const int q = warp * 32 + lane;
        const ulonglong2 *cell = mail + (j >= 0 ? j % RING : 0) * g + q;
        ulonglong2 w = make_ulonglong2(0ull, 0ull);
        if (j >= 0 && q < g) w = peek(cell);
        if (k < mine) {  // 1. row k's slice: each thread's max m, exp(x - m) kept in place of x
            const int s = k % SLOTS;
            const Row r = row_of(x, y, team + k * teams, cols, vec, rank, part4);
            float4 *slot = slots + s * part4;
            wait_oldest();  // this thread's copies of row k landed (it reads only its own)
            float4 v[ELEMS];
            float m = r.extra >= 0 ? keep[s][threadIdx.x] : -INFINITY, t = 0.f;
#pragma unroll
            for (int u = 0; u < ELEMS; ++u) {
                const int i = threadIdx.x + u * THREADS;
                v[u] = i < r.count ? slot[i] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
                m = fmaxf(m, fmaxf(fmaxf(v[u].x, v[u].y), fmaxf(v[u].z, v[u].w)));
            }
            const float mu = m == -INFINITY ? 0.f : m;  // all -inf: exp(x - 0) = 0, not exp(-inf - -inf)
#pragma unroll
            for (int u = 0; u < ELEMS; ++u) {
                const float4 e = make_float4(expf(v[u].x - mu), expf(v[u].y - mu), expf(v[u].z - mu), expf(v[u].w - mu));
#ifndef LOG_SOFTMAX
                const int i = threadIdx.x + u * THREADS;
                if (i < r.count) slot[i] = e;
#endif
                t += (e.x + e.y) + (e.z + e.w);
            }
            if (r.extra >= 0) {
                const float e = expf(keep[s][threadIdx.x] - mu);
#ifndef LOG_SOFTMAX
                keep[s][threadIdx.x] = e;
#endif
                t += e;
            }
#ifndef LOG_SOFTMAX
            own[s][threadIdx.x] = m;
#endif
            // Warp 0 merges the warps' pairs after the barrier. The pairs are double-buffered by row
            // parity: in the first LAG rows no other barrier comes before the warps write the next
            // row's, and warp 0 may still be reading these.
            MS p = warp_merge(MS{m, t});
            if (lane == 0) part[k & 1][warp] = p;
            __syncthreads();
            if (warp == 0) {
                p = warp_merge(lane < WARPS ? part[k & 1][lane] : MS{-INFINITY, 0.f});
                if (lane == 0) publish(mail + (k % RING) * g + rank, p, (unsigned)(k + 1));
            }
        } else {
            __syncthreads();  // every thread has read gathered[] of the last row before it is rewritten
        }
        if (j >= 0) {  // 2. row j: merge the team's pairs, scale the kept slice, write y
            const int s = j % SLOTS;
            if (warp * 32 < g) {
                const unsigned want = (unsigned)(j + 1);
                const long long start = clock64();
                while (q < g && ((unsigned)(w.x >> 32) != want || (unsigned)(w.y >> 32) != want)) {
                    if (*(volatile unsigned int *)failed || clock64() - start > 2000000000LL) {
                        atomicExch(failed, 1u);
                        gave_up = 1u;
                        break;
                    }
                    __nanosleep(32);
                    w = peek(cell);
                }
                const MS p = q < g ? MS{__uint_as_float((unsigned)w.x), __uint_as_float((unsigned)w.y)} : MS{-INFINITY, 0.f};
                const MS all = warp_merge(p);
                if (lane == 0) gathered[warp] = all;
            }
            __syncthreads();
            if (gave_up) return;  // the whole block leaves (one shared flag): the host reports it
            MS row{-INFINITY, 0.f};
            for (int i = 0; i * 32 < g; ++i) row = merge(row, gathered[i]);
#ifdef LOG_SOFTMAX
            const float lse = row.m + logf(row.s);  // all -inf: -inf, and x - lse is NaN as in PyTorch
#define OUT(e) ((e) - lse)
#else
            const float m = own[s][threadIdx.x];
            const float f = (m == -INFINITY ? 0.f : expf(m - row.m)) / row.s;  // 0 / 0: NaN when the row is all -inf
#define OUT(e) ((e) * f)
#endif
            const Row r = row_of(x, y, team + j * teams, cols, vec, rank, part4);
            const float4 *slot = slots + s * part4;
            float *yb = r.y + r.head + 4 * r.begin;
            const bool aligned = ((unsigned long long)yb & 15) == 0;
#pragma unroll
            for (int u = 0; u < ELEMS; ++u) {
                const int i = threadIdx.x + u * THREADS;
                if (i >= r.count) break;
                const float4 e = slot[i], o = make_float4(OUT(e.x), OUT(e.y), OUT(e.z), OUT(e.w));
                if (aligned) {
                    __stcs(reinterpret_cast<float4 *>(yb) + i, o);
                } else {
                    __stcs(yb + 4 * i, o.x);
                    __stcs(yb + 4 * i + 1, o.y);
                    __stcs(yb + 4 * i + 2, o.z);
                    __stcs(yb + 4 * i + 3, o.w);
                }
            }
            if (r.extra >= 0) __stcs(r.y + r.extra, OUT(keep[s][threadIdx.x]));
#undef OUT
        }
        // 3. the free slot (row j's, just written: a thread rewrites only what it read itself)
        // takes row k + AHEAD.
        const long long n = k + AHEAD;
        if (n < mine) fetch(row_of(x, y, team + n * teams, cols, vec, rank, part4), slots + (n % SLOTS) * part4, keep[n % SLOTS]);
        commit();
    }
}

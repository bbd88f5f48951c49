// Step 3: warp specialization. A producer warpgroup keeps the ring full; two consumers multiply.
//
// What changed from step 2: in step 2 the same warps waited for data, multiplied, and then all met
// at a __syncthreads before the stage could be refilled, so the tensor cores paused at every k
// tile. Here the block has three warpgroups with separate jobs:
//   * the producer (warpgroup 0; one of its threads works) loops over the k tiles: it waits until
//     stage s is "empty", announces the bytes on its "full" barrier and starts the TMA loads;
//   * two consumers (warpgroups 1 and 2) each own 64 rows of a 128 x 256 tile: they wait until stage
//     s is full, issue 4 wgmma m64n256k16, and release the stage they finished one tile earlier
//     (wgmma_wait<1> leaves the newest group running while it confirms the previous one is done),
//     with one arrival per warp on the stage's "empty" barrier.
// No block-wide barrier remains in the loop: the tensor cores always have the next stage queued.
// Registers move to where they are needed: setmaxnreg lets the producer give its registers back
// (down to 40 per thread) and the consumers take them (232 per thread) for their 128 float32
// accumulators (64 x 256 over 128 threads). The tile is 128 x 256, so each loaded byte of A
// feeds 256 columns and each byte of B 128 rows.
// Launch: grid (ceil(N / 256), ceil(M / 128)), block 384, STAGES x 48 KiB + 1 KiB of dynamic shared
// memory (4 stages: 193 KiB; the plan picks the depth that fits). Tensor maps: A box 128 x 64, B box
// 64 x 64, 128-byte swizzled.
// Limits: K and N multiples of 8 (TMA's 16-byte row strides), 16-byte aligned buffers.
// Inputs and output are fp16 (bfloat16 with -DUSE_BF16); products are summed in float32.
// Needs: compute capability 9.0a (wgmma, TMA and setmaxnreg: Hopper only).
#include <cuda_fp16.h>
#include <cuda_bf16.h>

typedef unsigned long long u64;
typedef unsigned int u32;

#ifdef USE_BF16
typedef __nv_bfloat16 elem;
#define WGMMA_IN "bf16"
// Two float32 results rounded to two bfloat16 in one 32-bit word (the lower address first).
__device__ __forceinline__ u32 pack2(float a, float b) {
    __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
    return *(u32 *)&v;
}
#else
typedef __half elem;
#define WGMMA_IN "f16"
// Two float32 results rounded to two halves in one 32-bit word (the lower address first).
__device__ __forceinline__ u32 pack2(float a, float b) {
    __half2 v = __floats2half2_rn(a, b);
    return *(u32 *)&v;
}
#endif

// The shared-memory address of p, as the PTX instructions on shared memory take it.
__device__ __forceinline__ u32 smem_addr(const void *p) { return (u32)__cvta_generic_to_shared(p); }

// wgmma reads its operands from shared memory through a 64-bit matrix descriptor (PTX ISA, "matrix
// descriptor format"): bits 0-13 the start address / 16, bits 16-29 the leading byte offset / 16,
// bits 32-45 the stride byte offset / 16, bits 62-63 the swizzle mode (1: 128 bytes). With the
// 128-byte swizzle, a tile is a stack of 8-row x 128-byte atoms (1024 bytes, 1024-byte aligned):
//   K-major A (rows of K): 8 rows of M per atom, the next 8 rows SBO = 1024 bytes on; a row holds
//       64 halves of K, so a 16-deep slice of K starts 32 bytes into the row (LBO is unused);
//   N-major B (rows of N): 8 rows of K per atom, the next 8 rows SBO = 1024 bytes on; a row holds 64
//       halves of N, and the next 64 columns of N are LBO bytes on (the next panel).
__device__ __forceinline__ u64 smem_desc(const void *p, u32 lbo, u32 sbo) {
    return (u64)((smem_addr(p) & 0x3FFFF) >> 4) | ((u64)((lbo & 0x3FFFF) >> 4) << 16) |
           ((u64)((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}

// wgmma is asynchronous: fence before the first one reads registers or shared memory others wrote,
// commit the issued ones as a group, and wait until at most N groups are still running.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// A TMA descriptor (the driver's CUtensorMap, made on the host by cuTensorMapEncodeTiled), taken by
// value as a __grid_constant__ parameter: the TMA unit reads it where the launch put it.
struct __align__(64) TensorMap { u64 words[16]; };

// mbarriers are 8-byte counters in shared memory with a phase bit. A phase completes when its
// expected arrivals have arrived and the bytes announced with expect_tx have landed; waiters spin
// on the parity of the phase they expect.
__device__ __forceinline__ void mbar_init(u64 *bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(u64 *bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(u64 *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(u64 *bar, u32 parity) {
    u32 done;
    asm volatile("{\n.reg .pred p;\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
    return done != 0;
}
__device__ __forceinline__ void mbar_wait(u64 *bar, u32 parity) {
    while (!mbar_try_wait(bar, parity)) {
    }
}
// Makes the barriers' initialisation visible to the TMA unit (and to the cluster) before use.
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

// One TMA load: the box of map at column x, row y lands in shared memory at dst (swizzled as the
// map says) and reports its bytes to bar. Parts of the box past the tensor's edge are zeros.
__device__ __forceinline__ void tma_load(void *dst, const TensorMap *map, int x, int y, u64 *bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 ::"r"(smem_addr(dst)), "l"((u64)map), "r"(x), "r"(y), "r"(smem_addr(bar)) : "memory");
}

// D[64 x 256] += A[64 x 16] * B[16 x 256]: A from a K-major tile, B from an N-major one (trans-b = 1).
// scaleD 0 starts the sum (D = A B), 1 adds to it.
__device__ __forceinline__ void wgmma_n256(float *d, u64 descA, u64 descB, int scaleD) {
    asm volatile(
        "{\n.reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32." WGMMA_IN "." WGMMA_IN "\n"
        "{" 
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 0, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(descA), "l"(descB), "r"(scaleD));
}


// Writes a warpgroup's 64 x NT accumulator to C (row-major, ldc N) at (row0, col0), rounded to
// the input's 16-bit type, skipping what lies past M or N. Thread t of warp w holds, for each
// 8-column slice j, rows row0 + 16w + t/4 and +8, columns col0 + 8j + 2(t%4) and +1, in
// d[4j .. 4j+3]: the mma.sync m16n8 fragment, repeated along N. N is even, so a pair of columns is
// either inside or past the edge.
template <int NT>
__device__ __forceinline__ void store_tile(const float *d, elem *C, int M, int N, int row0, int col0) {
    const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
    const int r = row0 + 16 * warp + lane / 4;
#pragma unroll
    for (int j = 0; j < NT / 8; j++) {
        const int c = col0 + 8 * j + 2 * (lane % 4);
        if (c < N) {
            if (r < M) *(u32 *)&C[(size_t)r * N + c] = pack2(d[4 * j], d[4 * j + 1]);
            if (r + 8 < M) *(u32 *)&C[(size_t)(r + 8) * N + c] = pack2(d[4 * j + 2], d[4 * j + 3]);
        }
    }
}

#define BM 128
#define BN 256
#define BK 64
#ifndef STAGES
#define STAGES 4
#endif
#define A_STAGE (BM * BK)  // elements of one stage of A: 16 KiB
#define B_STAGE (BK * BN)  // of B: four 64-column panels, 32 KiB
#define CONSUMERS 2

extern "C" __global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
    hg_specialized(const __grid_constant__ TensorMap mapA, const __grid_constant__ TensorMap mapB,
                   elem *__restrict__ C, int M, int N, int K) {
    extern __shared__ unsigned char smem_raw[];
    elem *sA = (elem *)(((size_t)smem_raw + 1023) & ~(size_t)1023);
    elem *sB = sA + STAGES * A_STAGE;
    __shared__ __align__(8) u64 full[STAGES], empty[STAGES];
    const int wg = threadIdx.x / 128;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int tiles = (K + BK - 1) / BK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], CONSUMERS * 4);  // one arrival per consumer warp
        }
        mbar_init_fence();
    }
    __syncthreads();
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x == 0) {
            for (int t = 0; t < tiles; t++) {
                const int s = t % STAGES;
                if (t >= STAGES) mbar_wait(&empty[s], (t / STAGES - 1) & 1);  // its last use is done
                mbar_expect_tx(&full[s], (A_STAGE + B_STAGE) * sizeof(elem));
                tma_load(sA + s * A_STAGE, &mapA, t * BK, row0, &full[s]);
                for (int p = 0; p < BN / 64; p++)
                    tma_load(sB + s * B_STAGE + p * BK * 64, &mapB, col0 + 64 * p, t * BK, &full[s]);
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int half = wg - 1;  // this consumer's 64 rows
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; i++) d[i] = 0.f;
    for (int t = 0; t < tiles; t++) {
        const int s = t % STAGES;
        mbar_wait(&full[s], (t / STAGES) & 1);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++)
            wgmma_n256(d, smem_desc(sA + s * A_STAGE + half * 64 * BK + 16 * kk, 16, 1024),
                       smem_desc(sB + s * B_STAGE + 16 * kk * 64, BK * 128, 1024), 1);
        wgmma_commit();
        wgmma_wait<1>();  // tile t - 1's products are done: its stage may be refilled
        if (t > 0 && threadIdx.x % 32 == 0) mbar_arrive(&empty[(t - 1) % STAGES]);
    }
    wgmma_wait<0>();
    store_tile<256>(d, C, M, N, row0 + 64 * half, col0);
}

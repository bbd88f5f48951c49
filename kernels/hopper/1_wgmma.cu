// Step 1: wgmma from shared memory. One warpgroup multiplies a 64 x 128 tile of C.
//
// What changed from lesson 03: there, each warp issued mma.sync m16n8k16 on fragments it had first
// loaded from shared memory into its own registers with ldmatrix. Hopper's wgmma ("warpgroup matrix
// multiply-accumulate") is issued by a warpgroup, 4 warps of 128 threads together, on a 64 x N x 16
// product (N up to 256), and reads A and B straight from shared memory through two 64-bit matrix
// descriptors. No ldmatrix, no operand registers: the registers hold only the float32
// accumulators (64 per thread for 64 x 128), and the instruction is asynchronous, so the warps may
// do other work while the tensor cores run it.
// The price is a layout rule. wgmma reads shared memory in 8-row x 128-byte atoms whose 16-byte
// chunks are permuted ("swizzled"): chunk c of row r sits at chunk c XOR (r mod 8). Here the
// threads copy the tiles from global memory themselves and apply that permutation as they store;
// step 2 hands the copy, swizzle included, to the TMA unit.
// A (M x K, rows of K: "K-major") lands as 64 rows of 128 bytes; B (K x N, rows of N: "N-major", the
// transposed layout for wgmma, trans-b = 1) as two 64-column panels of 64 rows of 128 bytes.
// Each 64-deep k tile: copy, fence (the async proxy that wgmma reads through must see the stores),
// 4 wgmma of depth 16, wait for them, then the next copy. Nothing overlaps yet: that is step 2.
// Launch: grid (N / 128, M / 64), block 128, 24 KiB of static shared memory.
// Limits: M % 64 == 0, N % 128 == 0, K % 64 == 0, 16-byte aligned buffers.
// Inputs and output are fp16 (bfloat16 with -DUSE_BF16); products are summed in float32.
// Needs: compute capability 9.0a (wgmma: Hopper only).
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

// D[64 x 128] += A[64 x 16] * B[16 x 128]: A from a K-major tile, B from an N-major one (trans-b = 1).
// scaleD 0 starts the sum (D = A B), 1 adds to it.
__device__ __forceinline__ void wgmma_n128(float *d, u64 descA, u64 descB, int scaleD) {
    asm volatile(
        "{\n.reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32." WGMMA_IN "." WGMMA_IN "\n"
        "{" 
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1, 0, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
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

#define BM 64
#define BN 128
#define BK 64

// The byte offset of a 16-byte chunk in a 128-byte-swizzled tile: chunk (off / 16) % 8 of row
// off / 128 moves to chunk XOR (row % 8). The tile starts on a 1024-byte boundary.
__device__ __forceinline__ int swizzle128(int off) { return off ^ (((off >> 7) & 7) << 4); }

extern "C" __global__ void __launch_bounds__(128) hg_wgmma(const elem *__restrict__ A, const elem *__restrict__ B,
                                                          elem *__restrict__ C, int M, int N, int K) {
    __shared__ __align__(1024) elem sA[BM * BK];  // 64 rows of K: 8 KiB
    __shared__ __align__(1024) elem sB[BK * BN];  // 2 panels of 64 k-rows x 64 columns: 16 KiB
    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float d[64];
#pragma unroll
    for (int i = 0; i < 64; i++) d[i] = 0.f;  // (the first wgmma overwrites them; K = 0 leaves zeros)
    for (int k0 = 0; k0 < K; k0 += BK) {
        // A: 64 rows x 8 chunks of 8 halves.
        for (int i = tid; i < BM * 8; i += 128) {
            const int r = i / 8, c = i % 8;
            const uint4 v = *(const uint4 *)&A[(size_t)(row0 + r) * K + k0 + 8 * c];
            *(uint4 *)((char *)sA + swizzle128(r * 128 + c * 16)) = v;
        }
        // B: 64 rows of K x 16 chunks; chunks 0-7 go to panel 0, 8-15 to panel 1 (8 KiB on).
        for (int i = tid; i < BK * 16; i += 128) {
            const int k = i / 16, c = i % 16;
            const uint4 v = *(const uint4 *)&B[(size_t)(k0 + k) * N + col0 + 8 * c];
            *(uint4 *)((char *)sB + (c / 8) * (BK * 128) + swizzle128(k * 128 + (c % 8) * 16)) = v;
        }
        // The stores went through the generic proxy; wgmma reads through the async proxy.
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            const u64 da = smem_desc(sA + 16 * kk, 16, 1024);             // 32 bytes into each row
            const u64 db = smem_desc(sB + 16 * kk * 64, BK * 128, 1024);  // 16 rows of K on
            wgmma_n128(d, da, db, k0 > 0 || kk > 0);
        }
        wgmma_commit();
        wgmma_wait<0>();
        __syncthreads();  // everyone is done reading the tiles before they are overwritten
    }
    store_tile<128>(d, C, M, N, row0 + 0, col0);
}

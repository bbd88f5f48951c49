// Step 7: the deep convolution (lesson 05's 3 x 3 layer) as an implicit GEMM on step 4's pipeline,
// with fp16 products summed in float32.
//
// The product: one row per output pixel (M = N x OH x OW), one column per filter (N = K), and a
// dot product over every tap and channel (R x R x C). Lesson 05 gathered A's rows by hand through a
// table of taps; here TMA gathers them, in three moves:
//   * A first kernel (hg_conv_nhwc) turns x (N, C, H, W) float32 into NHWC fp16, channels padded to
//     a multiple of 8 with zeros: a pixel's channels are then one contiguous row, as A's K-major
//     tile needs them. A second one (hg_conv_filters) writes the filters as B: for tap (r, s), a
//     Cp x Kp matrix of fp16 (channel rows, filter columns, N-major as steps 1-4 read B).
//   * A's tile for tap (r, s) and channels c0 .. c0 + BK - 1 (BK = 64 by default) is then one box
//     of a four-dimensional tensor map of the NHWC image (channel, x, y, image) at (c0, ow0 - P + s,
//     oh0 - P + r, n): BK channels x bw columns x 128/bw rows of pixels, which lands as 128 rows of
//     2 x BK bytes (at BK = 64, the same swizzled tile as step 4's A). The padding costs nothing: TMA fills every element of the box
//     outside the image (negative coordinates included) with zeros. The k loop runs over taps, then
//     over blocks of BK channels, so a tile's k tiles are R x R x ceil(Cp / BK) boxes.
//   * B's tile is BN / 128 panels of 64 filters x BK channels of the filters' map (filter, channel,
//     tap) per cluster block, multicast as in step 4; channels past Cp read as zeros.
// A tile of 128 pixels covers a rectangle of the output (bw columns x 128 / bw rows, bw the smallest
// power of two from 8 to 128 that holds a row), so at 56 x 56 it is 2 rows of 64 columns, of which
// 56 exist: 12.5% of the work is thrown away, in exchange for boxes that never straddle two rows.
// The epilogue writes y in NCHW float32 straight from registers, masked: acc + bias, then (when the
// launch asks) max(., 0) and a second per-filter bias, so a conv + ReLU + bias layer makes one pass
// over y, not two. The biases of the tile's filters wait in shared memory, loaded while the tile's
// products run. The biases of the tile's filters wait in shared memory, loaded while the tile's
// products run.
// The rest is step 4: clusters of 2 share B by multicast, persistent blocks walk the tiles, a
// producer warpgroup and two consumers of 64 x BN, a STAGES-deep ring (no staging buffer here).
//
// Fitted to the layer (the "7, fitted" variant: BK and BN set per layer, the ring as deep as fits,
// up to 16 stages). Where the time goes with the defaults (BK = 64, BN = 256) on a layer of few
// channels and filters, KernelBench's level-1 problem 63 (x 16 x 16 x 1024 x 1024, 128 filters of
// 3 x 3, no padding: 16.7 M output pixels): its useful work is 2 x 16.7 M x 128 x (9 x 16) = 0.62
// TFLOP, but a k tile of 64 channels holds 16 real ones (TMA's zero fill pads the rest) and a tile
// of 256 filters holds 128, so the tensor cores do 8x that, about 4.9 TFLOP: several ms even at
// fp16's dense peak. y is 16 x 128 x 1022 x 1022 float32, 8.6 GB: at least 2 ms of writes at 4.1
// TB/s, not overlapped with the products (both consumers store after their tile's last k tile).
// The NHWC copy reads x (1.07 GB) and writes 0.54 GB of fp16: about 0.4 ms more at that bandwidth.
// So the variant sizes BK to the channels (16: a 32-byte row, swizzled over 32 bytes; 32: over 64
// bytes; 64 as above) and BN to the filters (128 where K <= 128, with wgmma m64n128k16): on layer 63
// the tensor-core work falls to the useful 0.62 TFLOP and y's writes are what is left. Smaller k
// tiles carry less work per barrier round, so the ring gets deeper (16 stages of 8 KiB there).
// Launch: hg_conv_nhwc with grid (ceil(H*W / (2048 / ct)), ceil(Cp / ct), N), block 256 (ct: Cp if 8 or 16, else 32);
// hg_conv_filters with grid (ceil(Kp / 32), ceil(Cp / 32), R x R), block (32, 8); then hg_conv with grid
// 2 x (clusters that fit), block 384, STAGES x 2 x (128 x BK + BK x BN) bytes (twice that with
// SPLIT) + 1 KiB of dynamic shared memory, and 16 x (STAGES + BN / 2) bytes of static.
// The float32-accurate variant ("7, fitted, fp16x3 split", SPLIT below) takes each value as two fp16
// parts and makes three products per k tile, step 5's split on this convolution; its error against
// float64 is that of float32 sums (about 2^-22 of each product from the dropped lo x lo and lo's
// rounding), checked at float32's tolerance.
// The fitted variants also take strided layers (AlexNet's first: stride 4, 11 x 11, 3 channels)
// through hg_conv_s2d and hg_conv_s2d_filters (space to depth, below): the product then runs the
// equivalent stride-1 layer of C S S channels and ceil(R / S) x ceil(R / S) taps (48 channels and
// 3 x 3 taps there, so k tiles of 16 waste nothing where 3 channels of 11 x 11 would waste most).
// Limits: stride 1 (any stride for the fitted variants); any N, C, H, W, K, R and padding. Inputs
// are rounded to fp16 (split, for SPLIT): values beyond fp16's range (65504) would overflow.
// Needs: compute capability 9.0a (wgmma, TMA multicast, clusters and setmaxnreg: Hopper only).
#include <cuda_fp16.h>

typedef unsigned long long u64;
typedef unsigned int u32;
typedef __half elem;
#define WGMMA_IN "f16"

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
// A narrower swizzle (64 or 32 bytes: modes 2 and 3) has atoms of 8 rows of its span, so the next 8
// rows of a K-major tile of BK halves are SBO = 16 x BK bytes on.
__device__ __forceinline__ u64 smem_desc(const void *p, u32 lbo, u32 sbo, u32 mode) {
    return (u64)((smem_addr(p) & 0x3FFFF) >> 4) | ((u64)((lbo & 0x3FFFF) >> 4) << 16) |
           ((u64)((sbo & 0x3FFFF) >> 4) << 32) | ((u64)mode << 62);
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


#define BM 128
// BN is the filters of a block's tile (256, or 128 for layers of 128 filters or fewer); BK the
// channels of one k tile: 64 (a 128-byte row of fp16, the 128-byte swizzle), 32 (64 bytes) or 16
// (32 bytes), picked from the layer's channels so that a small-channel layer does not multiply
// zeros. A's tile is swizzled over its row's span (TMA and wgmma agree on the mode).
#ifndef BN
#ifdef SPLIT
#define BN 128
#else
#define BN 256
#endif
#endif
#ifndef BK
#define BK 64
#endif
#if BN != 128 && BN != 256
#error "BN must be 128 or 256"
#endif
#if BK == 64
#define A_SWIZZLE 1  // the descriptor's 128-byte mode
#elif BK == 32
#define A_SWIZZLE 2  // 64-byte
#elif BK == 16
#define A_SWIZZLE 3  // 32-byte
#else
#error "BK must be 16, 32 or 64"
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef GROUP
#define GROUP 8
#endif
#define A_STAGE (BM * BK)
#define B_STAGE (BK * BN)
#define CONSUMERS 2
// SPLIT: float32 accuracy from the fp16 tensor cores, as step 5 does for the product. The layout
// passes write each value twice, hi = fp16(v) and lo = fp16((v - hi) x 2^11) (scaled so that lo stays
// a normal number): x's NHWC rows hold Cp hi channels, then Cp lo ones; the filters' rows of a tap
// Cp hi channels, then Cp lo ones (Cp a multiple of BK here, so a box never straddles the two). A
// stage holds A hi, A lo, B hi and B lo; each k tile's Ahi Bhi goes into fresh registers and is
// added to the total with rounded float32 adds (the tensor core's float32 sum truncates), and
// Ahi Blo + Alo Bhi, 2^11 larger than their share, gathers in a third accumulator scaled back at the
// end; Alo Blo (about 2^-22 of the product) is dropped. Three accumulators of 64 x 128: BN = 128.
#ifdef SPLIT
#define HALVES 2
#if BN != 128
#error "SPLIT needs BN = 128 (three accumulators per thread)"
#endif
#else
#define HALVES 1
#endif
#define LO_SCALE 2048.0f

// D[64 x BN] += A[64 x 16] * B[16 x BN], accumulating.
__device__ __forceinline__ void wgmma_tile(float *d, u64 descA, u64 descB) {
#if BN == 256
    wgmma_n256(d, descA, descB, 1);
#else
    wgmma_n128(d, descA, descB, 1);
#endif
}

// Eight float32 values rounded to fp16, packed in 16 bytes for one store; lo gets the eight lo
// parts fp16((v - hi) x 2^11) (SPLIT's second copy; unused otherwise).
__device__ __forceinline__ uint4 pack8(const float *v, uint4 *lo) {
    uint4 h;
    u32 *hw = (u32 *)&h, *lw = (u32 *)lo;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const __half2 hi = __floats2half2_rn(v[2 * i], v[2 * i + 1]);
        hw[i] = *(const u32 *)&hi;
        const __half2 l = __floats2half2_rn((v[2 * i] - __low2float(hi)) * LO_SCALE, (v[2 * i + 1] - __high2float(hi)) * LO_SCALE);
        lw[i] = *(const u32 *)&l;
    }
    return h;
}

// xh[n][p][c] = half(x[n][c][p]) for the H*W pixels p of image n, zeros for C <= c < Cp: a tile of
// ct channels x 2048 / ct pixels through shared memory (ct = 8, 16 or 32: Cp where it is 8 or 16, so
// that a layer of few channels keeps every thread busy). Each thread reads two float4 along the pixels of
// a channel and writes 8 channels of a pixel as one 16-byte store: both sides coalesce, and a
// thread moves 32 bytes of x, not 4 (a float per thread left the pass issue-bound, at a quarter of
// the copy bandwidth). (SPLIT: a row of 2 Cp, hi then lo.)
// Launch: grid (ceil(H*W / (2048 / ct)), ceil(Cp / ct), N), block 256.
extern "C" __global__ void __launch_bounds__(256) hg_conv_nhwc(const float *__restrict__ x, __half *__restrict__ xh, int C, int HW, int Cp, int ct) {
    __shared__ float tile[32 * 65];  // ct rows of pt + 1 floats (the + 1 staggers the banks)
    const int pt = 2048 / ct, ld = pt + 1;
    const int p0 = blockIdx.x * pt, c0 = blockIdx.y * ct, n = blockIdx.z;
    const float *img = x + (size_t)n * C * HW;
    const bool vec = (HW & 3) == 0;  // every channel's row 16-byte aligned
#pragma unroll
    for (int it = 0; it < 2; it++) {
        const int idx = threadIdx.x + 256 * it, c = idx / (pt / 4), p = 4 * (idx % (pt / 4));
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (c0 + c < C) {
            const float *src = img + (size_t)(c0 + c) * HW + p0 + p;
            if (vec && p0 + p + 3 < HW) {
                v = *(const float4 *)src;
            } else {
                if (p0 + p < HW) v.x = src[0];
                if (p0 + p + 1 < HW) v.y = src[1];
                if (p0 + p + 2 < HW) v.z = src[2];
                if (p0 + p + 3 < HW) v.w = src[3];
            }
        }
        float *t = tile + c * ld + p;
        t[0] = v.x, t[1] = v.y, t[2] = v.z, t[3] = v.w;
    }
    __syncthreads();
    const int groups = ct / 8, p = threadIdx.x / groups, g = threadIdx.x % groups;
    if (p0 + p < HW && c0 + 8 * g < Cp) {
        float v[8];
#pragma unroll
        for (int i = 0; i < 8; i++) v[i] = tile[(8 * g + i) * ld + p];
        uint4 lo;
        const uint4 hi = pack8(v, &lo);
        uint4 *out = (uint4 *)(xh + ((size_t)n * HW + p0 + p) * (HALVES * Cp) + c0 + 8 * g);
        out[0] = hi;
#ifdef SPLIT
        out[Cp / 8] = lo;
#endif
    }
}

// wb[tap][c][k] = half(w[k][c][tap]) for the RR = R x R taps, zeros for c >= C or k >= K (Cp and Kp
// are C and K padded to multiples of 8): block (x, y, tap) moves a 32 x 32 (filter, channel) tile of
// one tap through shared memory. (SPLIT: a tap's 2 Cp rows, hi then lo.)
extern "C" __global__ void hg_conv_filters(const float *__restrict__ w, __half *__restrict__ wb, int K, int C, int RR, int Cp, int Kp) {
    __shared__ float tile[32][33];
    const int k0 = blockIdx.x * 32, c0 = blockIdx.y * 32, tap = blockIdx.z;
    for (int i = threadIdx.y; i < 32; i += 8) {
        const int k = k0 + i, c = c0 + threadIdx.x;
        tile[i][threadIdx.x] = (k < K && c < C) ? w[((size_t)k * C + c) * RR + tap] : 0.f;
    }
    __syncthreads();
    for (int i = threadIdx.y; i < 32; i += 8) {
        const int c = c0 + i, k = k0 + threadIdx.x;
        if (c < Cp && k < Kp) {
            const float v = tile[threadIdx.x][i];
            const __half hi = __float2half_rn(v);
            wb[((size_t)tap * HALVES * Cp + c) * Kp + k] = hi;
#ifdef SPLIT
            wb[((size_t)tap * HALVES * Cp + Cp + c) * Kp + k] = __float2half_rn((v - __half2float(hi)) * LO_SCALE);
#endif
        }
    }
}

// A layer of stride S > 1 becomes a layer of stride 1 by space to depth: with r = S r' + dy and
// s = S s' + dx, y[n][k][oh][ow] = sum over (c, dy, dx) and the Rs x Rs taps (r', s') (Rs = ceil(R / S))
// of w'[k][(c, dy, dx)][r'][s'] x'[n][(c, dy, dx)][oh + r'][ow + s'], where
// x'[n][(c S + dy) S + dx][i][j] = x[n][c][S i + dy - P][S j + dx - P] (zero outside the image) and
// w'[k][(c S + dy) S + dx][r'][s'] = w[k][c][S r' + dy][S s' + dx] (zero past R). These two passes
// write x' in NHWC fp16 (Hs x Ws pixels of Cp channels, Cp >= C S S) and w' as hg_conv_filters
// writes its filters (hi then lo with SPLIT); hg_conv then runs the stride-1, unpadded layer.
// hg_conv_s2d: a thread writes 8 channels of one pixel of x' as one 16-byte store. The threads of a
// block run along a row i of image n (j, then the channel groups), so the stores coalesce and the
// reads of x hit the same few lines of S rows; no 64-bit division per element.
// Launch: grid (ceil(Ws Cp / 8 / 256), Hs, N), block 256.
extern "C" __global__ void __launch_bounds__(256) hg_conv_s2d(const float *__restrict__ x, __half *__restrict__ xh, int C, int H, int W, int S,
                                                              int P, int Hs, int Ws, int Cp) {
    const int groups = Cp / 8, e = blockIdx.x * 256 + threadIdx.x;
    if (e >= Ws * groups) return;
    const int j = e / groups, g = e - j * groups, i = blockIdx.y, n = blockIdx.z;
    const float *img = x + (size_t)n * C * H * W;
    float v[8];
#pragma unroll
    for (int q = 0; q < 8; q++) {
        const int cq = 8 * g + q, c = cq / (S * S), dy = (cq / S) % S, dx = cq % S;
        const int h = S * i + dy - P, w = S * j + dx - P;
        v[q] = (c < C && h >= 0 && h < H && w >= 0 && w < W) ? img[((size_t)c * H + h) * W + w] : 0.f;
    }
    uint4 lo;
    const uint4 hi = pack8(v, &lo);
    uint4 *out = (uint4 *)(xh + (((size_t)n * Hs + i) * Ws + j) * (HALVES * Cp) + 8 * g);
    out[0] = hi;
#ifdef SPLIT
    out[Cp / 8] = lo;
#endif
}

// w' as hg_conv_filters lays out its filters: wb[tap'][c'][k], tap' = r' Rs + s'. One thread per
// element written, filters fastest (the writes coalesce). Launch: 1-D, any grid (grid-stride); total
// is the elements of one part (Rs Rs Cp Kp).
extern "C" __global__ void hg_conv_s2d_filters(const float *__restrict__ w, __half *__restrict__ wb, int K, int C, int R, int S, int Rs,
                                               int Cp, int Kp, long long total) {
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total; e += (long long)gridDim.x * blockDim.x) {
        const int k = (int)(e % Kp);
        const long long rest = e / Kp;
        const int cq = (int)(rest % Cp), tap = (int)(rest / Cp);
        float v = 0.f;
        if (k < K && cq < C * S * S) {
            const int c = cq / (S * S), dy = (cq / S) % S, dx = cq % S;
            const int r = S * (tap / Rs) + dy, s = S * (tap % Rs) + dx;
            if (r < R && s < R) v = w[(((size_t)k * C + c) * R + r) * R + s];
        }
        const __half hi = __float2half_rn(v);
        wb[((size_t)tap * HALVES * Cp + cq) * Kp + k] = hi;
#ifdef SPLIT
        wb[((size_t)tap * HALVES * Cp + Cp + cq) * Kp + k] = __float2half_rn((v - __half2float(hi)) * LO_SCALE);
#endif
    }
}

__device__ __forceinline__ u32 cluster_rank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// Arrives on the barrier at bar's offset in block peer of the cluster, releasing at block scope
// (step 4 measures what a cluster-scope release costs).
__device__ __forceinline__ void mbar_arrive_cluster(u64 *bar, u32 peer) {
    asm volatile("{\n.reg .b32 remote;\n"
                 "mapa.shared::cluster.u32 remote, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n"
                 ::"r"(smem_addr(bar)), "r"(peer) : "memory");
}
// TMA loads of a box of a 4-dimensional map (an NHWC image batch: channel, x, y, image) and of a
// 3-dimensional one (the filters), multicast to the blocks of the cluster in mask. A coordinate
// may be negative or past the extent: that part of the box is zeros, which is the convolution's
// padding.
__device__ __forceinline__ void tma_load_4d(void *dst, const TensorMap *map, int c, int x, int y, int n, u64 *bar) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n"
                 ::"r"(smem_addr(dst)), "l"((u64)map), "r"(c), "r"(x), "r"(y), "r"(n), "r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void tma_load_3d_multicast(void *dst, const TensorMap *map, int a, int b, int c, u64 *bar, unsigned short mask) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3, %4}], [%5], %6;\n"
                 ::"r"(smem_addr(dst)), "l"((u64)map), "r"(a), "r"(b), "r"(c), "r"(smem_addr(bar)), "h"(mask) : "memory");
}
// Super-tile i of a grid of rows x cols super-tiles, in bands of GROUP rows walked column by column.
__device__ __forceinline__ void super_tile(int i, int rows, int cols, int *r, int *c) {
    const int band = i / (GROUP * cols), first = band * GROUP;
    const int height = min(GROUP, rows - first);
    const int j = i % (GROUP * cols);
    *r = first + j % height;
    *c = j / height;
}

// The output pixels of M tile m: image n, rows oh0 .. oh0 + 128/bw - 1 and columns ow0 .. ow0 + bw - 1
// (bw = 1 << bwLog2, a power of two from 8 to 128). Tiles run over columns, then rows, then images.
struct PixelTile { int n, oh0, ow0; };
__device__ __forceinline__ PixelTile pixel_tile(int m, int tilesW, int tilesH, int bwLog2) {
    PixelTile t;
    const int perImage = tilesW * tilesH;
    t.n = m / perImage;
    const int r = m - t.n * perImage;
    t.oh0 = (r / tilesW) * (128 >> bwLog2);
    t.ow0 = (r % tilesW) << bwLog2;
    return t;
}

// The epilogue's constants of a consumer's tile, in shared memory: entry i holds filters col0 + 2i
// and col0 + 2i + 1 as {bias, bias, bias2, bias2} (zeros past K, and for bias2 when there is none),
// so the thread that stores a filter pair reads both biases with one 16-byte load, broadcast to the
// 8 threads of the pair. The two consumers (both on the same tile) fill it when their tile's filters
// change, before the tile's products, so that the loads from global memory land while the tensor
// cores run. (Reading bias[k] from global memory at each store made the epilogue wait on a load per
// element: the most sampled stall of the whole kernel on KernelBench's conv problems.)
__device__ __forceinline__ void fill_epilogue(float4 *e, const float *__restrict__ bias, const float *__restrict__ bias2, int col0, int K) {
    for (int i = threadIdx.x - 128; i < BN / 2; i += 128 * CONSUMERS) {
        const int k = col0 + 2 * i;
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (k < K) v.x = bias[k], v.z = bias2 != nullptr ? bias2[k] : 0.f;
        if (k + 1 < K) v.y = bias[k + 1], v.w = bias2 != nullptr ? bias2[k + 1] : 0.f;
        e[i] = v;
    }
}
// A named barrier (id 1; 0 is __syncthreads) for the consumers' threads alone.
__device__ __forceinline__ void consumer_sync() { asm volatile("bar.sync 1, %0;\n" ::"n"(128 * CONSUMERS) : "memory"); }

// Writes a consumer's 64 x BN float32 tile (rows: pixels of the tile from row0 on; columns:
// filters col0 ..) into y (N, K, OH, OW) through the epilogue, masking pixels and filters past the
// edge: v = acc + bias[k], then max(v, 0) when relu is set, then + bias2[k] (KernelBench's level-2
// conv + ReLU + bias in one pass over y).
// Thread t of warp w holds rows 16w + t/4 and +8, columns 8j + 2(t%4) and +1 (d[4j .. 4j+3]): the 8
// threads of a column pair hold 8 consecutive pixels of a row, so each store instruction writes
// 32-byte runs of y, whole sectors. With no load left in it, the test of each filter against K is
// a predicate on its store, not a branch.
__device__ __forceinline__ float epilogue(float acc, float b, float b2, int relu) {
    const float v = acc + b;
    return (relu ? fmaxf(v, 0.f) : v) + b2;
}
__device__ __forceinline__ void store_nchw(const float *d, float *__restrict__ y, const float4 *e, int relu, PixelTile t,
                                           int row0, int col0, int bwLog2, int N, int K, int OH, int OW) {
    const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32, q = lane % 4;
    const size_t plane = (size_t)OH * OW;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int r = row0 + 16 * warp + lane / 4 + 8 * h;
        const int oh = t.oh0 + (r >> bwLog2), ow = t.ow0 + (r & ((1 << bwLog2) - 1));
        if (t.n >= N || oh >= OH || ow >= OW) continue;
        float *out = y + ((size_t)t.n * K + col0 + 2 * q) * plane + (size_t)oh * OW + ow;
#pragma unroll
        for (int j = 0; j < BN / 8; j++) {
            const int k = col0 + 8 * j + 2 * q;
            const float4 c = e[4 * j + q];
            if (k < K) out[8 * j * plane] = epilogue(d[4 * j + 2 * h], c.x, c.z, relu);
            if (k + 1 < K) out[(8 * j + 1) * plane] = epilogue(d[4 * j + 2 * h + 1], c.y, c.w, relu);
        }
    }
}

// The layer: x's NHWC map (channel, x, y, image; boxes of BK x bw x 128/bw x 1), the filters' map
// (filter, channel, tap; boxes of 64 x BK x 1), bias and y (N, K, OH, OW) in float32. cblocks is
// ceil(Cp / BK); bwLog2 the tile's width; tilesW and tilesH how many tiles cover a row and a column;
// bias2 (null for none) and relu the epilogue's (store_nchw).
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128 * (CONSUMERS + 1), 1)
    hg_conv(const __grid_constant__ TensorMap mapX, const __grid_constant__ TensorMap mapW, const float *__restrict__ bias,
            float *__restrict__ y, int N, int K, int OH, int OW, int R, int P, int cblocks, int bwLog2, int tilesW, int tilesH,
            const float *__restrict__ bias2, int relu) {
    extern __shared__ unsigned char smem_raw[];
    elem *sA = (elem *)(((size_t)smem_raw + 1023) & ~(size_t)1023);
    elem *sB = sA + STAGES * HALVES * A_STAGE;  // stage st: A at sA + st HALVES A_STAGE, B likewise
    __shared__ __align__(8) u64 full[STAGES], empty[STAGES];
    __shared__ float4 epi[BN / 2];  // the tile's epilogue constants (fill_epilogue)
    const int wg = threadIdx.x / 128;
    const u32 rank = cluster_rank(), peer = rank ^ 1;
    const int tiles = R * R * cblocks;  // k tiles: taps x channel blocks
    const int mtiles = N * tilesH * tilesW;
    const int rows = (mtiles + 1) / 2, cols = (K + BN - 1) / BN;
    const int supers = rows * cols, clusters = gridDim.x / 2, cluster = blockIdx.x / 2;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 2 * CONSUMERS * 4);  // every consumer warp of both blocks
        }
        mbar_init_fence();
    }
    cluster_sync();
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x == 0) {
            int g = 0;
            for (int i = cluster; i < supers; i += clusters) {
                int sr, sc;
                super_tile(i, rows, cols, &sr, &sc);
                // A tile past the last (an odd count) reads image N: all zeros, and stores nothing.
                const PixelTile pt = pixel_tile(2 * sr + rank, tilesW, tilesH, bwLog2);
                const int col0 = sc * BN;
                int r = 0, s = 0, cb = 0;  // the k tile's tap and channel block
                for (int t = 0; t < tiles; t++, g++) {
                    const int st = g % STAGES;
                    if (g >= STAGES) mbar_wait(&empty[st], (g / STAGES - 1) & 1);
                    mbar_expect_tx(&full[st], HALVES * (A_STAGE + B_STAGE) * sizeof(elem));
                    for (int h = 0; h < HALVES; h++) {  // hi, then (SPLIT) lo: cblocks x BK channels on
                        const int c = (h * cblocks + cb) * BK;
                        tma_load_4d(sA + (st * HALVES + h) * A_STAGE, &mapX, c, pt.ow0 - P + s, pt.oh0 - P + r, pt.n, &full[st]);
                        for (int p = (BN / 128) * rank; p < (BN / 128) * (rank + 1); p++)  // this block's panels of 64
                            tma_load_3d_multicast(sB + (st * HALVES + h) * B_STAGE + p * BK * 64, &mapW, col0 + 64 * p, c, r * R + s, &full[st], 3);
                    }
                    if (++cb == cblocks) {
                        cb = 0;
                        if (++s == R) s = 0, r++;
                    }
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        const int half = wg - 1;
        int g = 0, ecol = -1;  // ecol: the filters whose constants epi holds
        float d[BN / 2];
#ifdef SPLIT
        float tmp[BN / 2], corr[BN / 2];
#endif
        for (int i = cluster; i < supers; i += clusters) {
            int sr, sc;
            super_tile(i, rows, cols, &sr, &sc);
            const PixelTile pt = pixel_tile(2 * sr + rank, tilesW, tilesH, bwLog2);
            const int col0 = sc * BN;
            const bool refill = col0 != ecol;
            if (refill) {
                consumer_sync();  // both consumers' stores of their last tile have read the old ones
                fill_epilogue(epi, bias, bias2, col0, K);
                ecol = col0;
            }
#pragma unroll
            for (int j = 0; j < BN / 2; j++) d[j] = 0.f;
#ifdef SPLIT
#pragma unroll
            for (int j = 0; j < BN / 2; j++) corr[j] = 0.f;
            for (int t = 0; t < tiles; t++, g++) {
                const int st = g % STAGES;
                const elem *ahi = sA + st * 2 * A_STAGE + half * 64 * BK, *alo = ahi + A_STAGE;
                const elem *bhi = sB + st * 2 * B_STAGE, *blo = bhi + B_STAGE;
                mbar_wait(&full[st], (g / STAGES) & 1);
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; kk++)  // this k tile's Ahi Bhi, in fresh registers
                    wgmma_n128(tmp, smem_desc(ahi + 16 * kk, 16, 16 * BK, A_SWIZZLE), smem_desc(bhi + 16 * kk * 64, BK * 128, 1024, 1), kk > 0);
#pragma unroll
                for (int kk = 0; kk < BK / 16; kk++) {  // the corrections, summed over the whole k loop
                    wgmma_n128(corr, smem_desc(ahi + 16 * kk, 16, 16 * BK, A_SWIZZLE), smem_desc(blo + 16 * kk * 64, BK * 128, 1024, 1), 1);
                    wgmma_n128(corr, smem_desc(alo + 16 * kk, 16, 16 * BK, A_SWIZZLE), smem_desc(bhi + 16 * kk * 64, BK * 128, 1024, 1), 1);
                }
                wgmma_commit();
                wgmma_wait<0>();
                if (threadIdx.x % 32 == 0) {
                    mbar_arrive(&empty[st]);
                    mbar_arrive_cluster(&empty[st], peer);
                }
#pragma unroll
                for (int j = 0; j < BN / 2; j++) d[j] += tmp[j];  // rounded float32 adds
            }
#pragma unroll
            for (int j = 0; j < BN / 2; j++) d[j] += corr[j] * (1.0f / LO_SCALE);
#else
            for (int t = 0; t < tiles; t++, g++) {
                const int st = g % STAGES;
                mbar_wait(&full[st], (g / STAGES) & 1);
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; kk++)
                    wgmma_tile(d, smem_desc(sA + st * A_STAGE + half * 64 * BK + 16 * kk, 16, 16 * BK, A_SWIZZLE),
                               smem_desc(sB + st * B_STAGE + 16 * kk * 64, BK * 128, 1024, 1));
                wgmma_commit();
                wgmma_wait<1>();
                if (t > 0 && threadIdx.x % 32 == 0) {
                    const int prev = (g - 1) % STAGES;
                    mbar_arrive(&empty[prev]);
                    mbar_arrive_cluster(&empty[prev], peer);
                }
            }
            wgmma_wait<0>();
            if (tiles > 0 && threadIdx.x % 32 == 0) {
                const int last = (g - 1) % STAGES;
                mbar_arrive(&empty[last]);
                mbar_arrive_cluster(&empty[last], peer);
            }
#endif
            if (refill) consumer_sync();  // the new constants are in place
            store_nchw(d, y, epi, relu, pt, 64 * half, col0, bwLog2, N, K, OH, OW);
        }
    }
    cluster_sync();
}

// Lesson 08's fp16 split of an operand that KernelBench stores transposed (A.T of problems 16 and
// 18, B.T of problems 17 and 18, nn.Linear's weight W = B^T of the level-2 GEMMs), straight from that
// layout: the split step converts its float32 operands into fp16 halves before the product anyway
// (hg_split_halves in kernels/hopper/5_split.cu), so reading the stored transpose here costs nothing
// over that pass, where a transpose first would add a read and a write of the operand.
//     hi = fp16(x),  lo = fp16((x - hi) * 2^11)        (5_split.cu's LO_SCALE, hopper.SplitLoScale)
// x is rows x cols, stored transposed as xt (cols x rows); hi and lo are rowsOut x colsOut
// (5_split.cu's padded layout: K and N rounded up to multiples of 8), zero past rows and cols.
// A 32 x 32 tile goes through shared memory (33 floats a row, so the column reads hit 32 different
// banks): the reads of xt are whole rows of 128 bytes, the writes of hi and lo rows of 64.
// Launch: grid (ceil(colsOut / 32), ceil(rowsOut / 32)), block (32, 8).
#include <cuda_fp16.h>

#define KB_LO_SCALE 2048.0f

extern "C" __global__ void kb_split_halves_t(const float *__restrict__ xt, __half *__restrict__ hi, __half *__restrict__ lo, int rows,
                                             int cols, int rowsOut, int colsOut) {
    __shared__ float tile[32][33];
    const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
    for (int j = threadIdx.y; j < 32; j += 8) {
        const int c = c0 + j, r = r0 + threadIdx.x; // xt row c, column r
        tile[j][threadIdx.x] = r < rows && c < cols ? xt[(size_t)c * rows + r] : 0.f;
    }
    __syncthreads();
    for (int j = threadIdx.y; j < 32; j += 8) {
        const int r = r0 + j, c = c0 + threadIdx.x;
        if (r < rowsOut && c < colsOut) {
            const float v = tile[threadIdx.x][j];
            const __half h = __float2half_rn(v);
            hi[(size_t)r * colsOut + c] = h;
            lo[(size_t)r * colsOut + c] = __float2half_rn((v - __half2float(h)) * KB_LO_SCALE);
        }
    }
}

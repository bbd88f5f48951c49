// Atomics step 1: a half dot product where every thread adds its one product into ONE address
// with atomicAdd on __half. This is the article's experiment (grid n/256 x 256, one atomic per
// thread), not a good way to reduce: n atomics serialise on one memory location, and the 16-bit
// atomic is slower per operation than the 32-bit ones the hardware handles best.
// The result in half precision is also numerically poor: once the sum is large its spacing
// exceeds a product and further additions round away (see the lesson's drift table).
#include <cuda_fp16.h>

extern "C" __global__ void dot_half_atomic(const __half *x, const __half *y, __half *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(out, __hmul(x[i], y[i]));
    }
}

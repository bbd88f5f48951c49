// Solution of exercise 2: split each float into an fp16 high part and an fp16 low part scaled by 2^11.
#include <cuda_fp16.h>

extern "C" __global__ void ex2_split(const float *__restrict__ x, __half *__restrict__ hi, __half *__restrict__ lo,
                                     long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const float v = x[i];
        const __half h = __float2half_rn(v);
        hi[i] = h;
        lo[i] = __float2half_rn((v - __half2float(h)) * 2048.0f);
    }
}

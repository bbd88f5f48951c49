// The elementwise tails of KernelBench's level-2 GEMMs after the product y = x W^T (lesson 03's or
// lesson 08's step, which stores C and has no epilogue of its own), in place over y (rows x n):
//   mode 0 (12_Gemm_Multiply_LeakyReLU): y = leaky_relu((y + bias[j]) * s0, slope s1)
//   mode 1 (63_Gemm_ReLU_Divide):        y = relu(y + bias[j]) / s0
//   mode 2 (76_Gemm_Add_ReLU):           y = relu(y + bias[j])
// j the column. One read and one write of y more than a product with this in its store; float4
// loads and stores where n is a multiple of 4 (then every row starts 16-byte aligned).
// A NaN stays NaN (an output the product never wrote must not turn into 0): torch's relu and
// leaky_relu keep NaN too.
// Launch: 1D grid-stride, any grid; y, bias, long long total = rows * n, int n, int mode, s0, s1.
__device__ __forceinline__ float kb_tail(float v, float b, int mode, float s0, float s1) {
    v += b;
    if (mode == 0) {
        v *= s0;
        return v < 0.f ? v * s1 : v;
    }
    v = v < 0.f ? 0.f : v; // NaN compares false: kept
    return mode == 1 ? v / s0 : v;
}

extern "C" __global__ void kb_linear_epilogue(float *__restrict__ y, const float *__restrict__ bias, long long total, int n,
                                              int mode, float s0, float s1) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    if ((n & 3) == 0) {
        float4 *y4 = (float4 *)y;
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total / 4; i += stride) {
            const int j = (int)((i * 4) % n);
            float4 v = y4[i];
            v.x = kb_tail(v.x, bias[j], mode, s0, s1);
            v.y = kb_tail(v.y, bias[j + 1], mode, s0, s1);
            v.z = kb_tail(v.z, bias[j + 2], mode, s0, s1);
            v.w = kb_tail(v.w, bias[j + 3], mode, s0, s1);
            y4[i] = v;
        }
        return;
    }
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride)
        y[i] = kb_tail(y[i], bias[i % n], mode, s0, s1);
}

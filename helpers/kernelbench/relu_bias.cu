// The tail of KernelBench level 2 problem 1 (Conv2D + ReLU + BiasAdd), after a conv step of lesson
// 05 has written y = conv(x) + conv bias: y = relu(y) + bias[k] in place, k the channel of each NCHW
// element (the bias has shape (K, 1, 1)). The lesson's fused steps end in a max pool, so this
// problem runs its conv step and then this pass: one read and one write of y more than a fused
// kernel would need.
//
// A NaN stays NaN: fmaxf(NaN, 0) would return 0 and hide a conv output that was never written (the
// run poisons every output with NaN first); torch.relu keeps NaN too.
//
// Launch: 1D grid-stride, any grid; n = N*K*HW elements, hw = OH*OW, k = K.
extern "C" __global__ void kb_relu_bias(float *__restrict__ y, const float *__restrict__ bias, long long n, int hw, int k) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const float v = y[i];
        const int c = (int)((i / hw) % k);
        y[i] = (v != v ? v : fmaxf(v, 0.f)) + bias[c];
    }
}

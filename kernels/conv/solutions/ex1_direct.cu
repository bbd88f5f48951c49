// Exercise 1's solution: the tap's input row and column from the output pixel, the stride and the
// padding, and the bounds test that makes the padding zeros.
extern "C" __global__ void ex1_direct(const float *__restrict__ x, const float *__restrict__ w,
                                      const float *__restrict__ bias, float *__restrict__ y, int N, int C, int H,
                                      int W, int K, int R, int S, int P, int OH, int OW) {
    const long long total = (long long)N * K * OH * OW;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        const int ow = (int)(i % OW), oh = (int)((i / OW) % OH), k = (int)((i / OW / OH) % K);
        const long long n = i / OW / OH / K;
        float acc = 0.f;
        for (int c = 0; c < C; ++c)
            for (int r = 0; r < R; ++r)
                for (int s = 0; s < R; ++s) {
                    const int ih = oh * S - P + r, iw = ow * S - P + s;
                    if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                    acc += x[((n * C + c) * H + ih) * W + iw] * w[((k * C + c) * R + r) * R + s];
                }
        y[i] = acc + bias[k];
    }
}

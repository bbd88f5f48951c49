// Step 1, direct convolution: one thread per output element y[n][k][oh][ow], the definition as a loop.
//
//   y[n][k][oh][ow] = bias[k] + sum over c < C, r < R, s < R of
//                     x[n][c][oh*S - P + r][ow*S - P + s] * w[k][c][r][s]   (taps outside the input are 0)
//
// Every layout is NCHW / KCRR, row-major, float32; the accumulation is float32 on the CUDA cores, so
// the result is float32-exact (only rounding in the sums). Consecutive threads take consecutive
// ow of the same (n, k, oh): their filter reads are the same address (a broadcast) and their input
// reads are S floats apart. Each input value is read by R*R/(S*S) threads of each of the K filters,
// from L1 or L2 if we are lucky, from memory otherwise: nothing is reused on purpose. That, and the
// div/mod of the index and the bounds test of every tap, is what the next steps remove.
//
// Launch: 1-D, blocks of 256, a grid-stride loop over the N*K*OH*OW outputs (grid = a few waves).
// Limits: none beyond memory and the lesson's shape rules (checked by the plan before the launch).
extern "C" __global__ void conv_direct(const float *__restrict__ x, const float *__restrict__ w,
                                       const float *__restrict__ bias, float *__restrict__ y, int N, int C, int H,
                                       int W, int K, int R, int S, int P, int OH, int OW) {
    const long long total = (long long)N * K * OH * OW;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        const int ow = (int)(i % OW);
        long long t = i / OW;
        const int oh = (int)(t % OH);
        t /= OH;
        const int k = (int)(t % K);
        const long long n = t / K;
        const float *xn = x + n * C * H * W;
        const float *wk = w + (long long)k * C * R * R;
        const int ih0 = oh * S - P, iw0 = ow * S - P;
        float acc = 0.f;
        for (int c = 0; c < C; ++c) {
            for (int r = 0; r < R; ++r) {
                const int ih = ih0 + r;
                if (ih < 0 || ih >= H) continue;
                for (int s = 0; s < R; ++s) {
                    const int iw = iw0 + s;
                    if (iw < 0 || iw >= W) continue;
                    acc += xn[((long long)c * H + ih) * W + iw] * wk[(c * R + r) * R + s];
                }
            }
        }
        y[i] = acc + bias[k];
    }
}

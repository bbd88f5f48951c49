// Exercise 1, a solution: thread i of the flat launch takes output element i = n*F + f, so a warp
// reads 32 consecutive features of one corner row (or of the next point's rows when F < 32).
extern "C" __global__ void ex1_coalesced(const float *__restrict__ feats, const float *__restrict__ points,
                                         float *__restrict__ out, int N, int F) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)N * F) return;
    const long long n = i / F, f = i % F;
    const float u = (points[n * 3 + 0] + 1.f) * 0.5f;
    const float v = (points[n * 3 + 1] + 1.f) * 0.5f;
    const float w = (points[n * 3 + 2] + 1.f) * 0.5f;
    const float a = (1.f - v) * (1.f - w), b = (1.f - v) * w, c = v * (1.f - w), d = v * w;
    const float *x = feats + n * 8 * F + f;
    out[n * F + f] = (1.f - u) * (a * x[0] + b * x[(long long)F] + c * x[2LL * F] + d * x[3LL * F]) +
                     u * (a * x[4LL * F] + b * x[5LL * F] + c * x[6LL * F] + d * x[7LL * F]);
}

// Exercise 2, a solution: each lane accumulates its features' share of the three sums, then the
// warp adds them with shuffles (five halvings); lane 0 writes 1/2 x each sum.
extern "C" __global__ void ex2_dpoints(const float *__restrict__ feats, const float *__restrict__ points,
                                       const float *__restrict__ g, float *__restrict__ dpoints, int N, int F) {
    const long long n = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (n >= N) return;
    const int lane = threadIdx.x % 32;
    const float u = (points[n * 3 + 0] + 1.f) * 0.5f;
    const float v = (points[n * 3 + 1] + 1.f) * 0.5f;
    const float w = (points[n * 3 + 2] + 1.f) * 0.5f;
    const float a = (1.f - v) * (1.f - w), b = (1.f - v) * w, c = v * (1.f - w), d = v * w;
    float du = 0.f, dv = 0.f, dw = 0.f;
    for (int f = lane; f < F; f += 32) {
        const float *x = feats + n * 8 * F + f;
        float q[8];
        for (int k = 0; k < 8; ++k) q[k] = x[k * (long long)F];
        const float gv = g[n * F + f];
        du += gv * ((a * q[4] + b * q[5] + c * q[6] + d * q[7]) - (a * q[0] + b * q[1] + c * q[2] + d * q[3]));
        dv += gv * ((1.f - u) * ((1.f - w) * (q[2] - q[0]) + w * (q[3] - q[1])) + u * ((1.f - w) * (q[6] - q[4]) + w * (q[7] - q[5])));
        dw += gv * ((1.f - u) * ((1.f - v) * (q[1] - q[0]) + v * (q[3] - q[2])) + u * ((1.f - v) * (q[5] - q[4]) + v * (q[7] - q[6])));
    }
    for (int o = 16; o > 0; o /= 2) {
        du += __shfl_down_sync(0xffffffffu, du, o);
        dv += __shfl_down_sync(0xffffffffu, dv, o);
        dw += __shfl_down_sync(0xffffffffu, dw, o);
    }
    if (lane == 0) {
        dpoints[n * 3 + 0] = 0.5f * du;
        dpoints[n * 3 + 1] = 0.5f * dv;
        dpoints[n * 3 + 2] = 0.5f * dw;
    }
}

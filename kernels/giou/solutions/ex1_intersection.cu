// Exercise 1's solution: the intersection of two boxes is the overlap of their x ranges times the
// overlap of their y ranges, each clamped at zero when the ranges do not meet.
#define EPS 1e-5f

extern "C" __global__ void ex1_giou(const float *__restrict__ pred, const float *__restrict__ target, const int *__restrict__ counts,
                                    float *__restrict__ out, int B, int M) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)B * M) return;
    const int b = (int)(i / M), j = (int)(i % M);
    if (j >= counts[b]) {
        out[i] = 0.f;
        return;
    }
    const float *p = pred + 4 * i, *t = target + 4 * i;
    const float a1 = (p[2] - p[0]) * (p[3] - p[1]);
    const float a2 = (t[2] - t[0]) * (t[3] - t[1]);
    const float iw = fmaxf(fminf(p[2], t[2]) - fmaxf(p[0], t[0]), 0.f);
    const float ih = fmaxf(fminf(p[3], t[3]) - fmaxf(p[1], t[1]), 0.f);
    const float inter = iw * ih;
    const float uni = a1 + a2 - inter;
    const float ew = fmaxf(fmaxf(p[2], t[2]) - fminf(p[0], t[0]), 0.f);
    const float eh = fmaxf(fmaxf(p[3], t[3]) - fminf(p[1], t[1]), 0.f);
    const float enc = ew * eh;
    out[i] = 1.f - (inter / fmaxf(uni, EPS) - (enc - uni) / fmaxf(enc, EPS));
}

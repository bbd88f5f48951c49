// Exercise 2's solution: the enclosing box's width ew = max(p.x2, t.x2) - min(p.x1, t.x1) moves with
// p.x2 when the prediction sticks out on the right (p.x2 >= t.x2) and against p.x1 when it sticks
// out on the left (p.x1 <= t.x1); a clamped (zero) width passes nothing. Same for the height.
#define EPS 1e-5f

extern "C" __global__ void ex2_grad(const float *__restrict__ pred, const float *__restrict__ target, const int *__restrict__ counts,
                                    float *__restrict__ dpred, int B, int M, float inv_total) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)B * M) return;
    const int b = (int)(i / M), j = (int)(i % M);
    float *d = dpred + 4 * i;
    if (j >= counts[b]) {
        d[0] = d[1] = d[2] = d[3] = 0.f;
        return;
    }
    const float *p = pred + 4 * i, *t = target + 4 * i;
    const float aw = p[2] - p[0], ah = p[3] - p[1];
    const float a1 = aw * ah, a2 = (t[2] - t[0]) * (t[3] - t[1]);
    const bool lx = p[0] >= t[0], ly = p[1] >= t[1], rx = p[2] <= t[2], ry = p[3] <= t[3];
    const float iw0 = (rx ? p[2] : t[2]) - (lx ? p[0] : t[0]);
    const float ih0 = (ry ? p[3] : t[3]) - (ly ? p[1] : t[1]);
    const float iw = fmaxf(iw0, 0.f), ih = fmaxf(ih0, 0.f);
    const float inter = iw * ih;
    const float uni = a1 + a2 - inter;
    const float uc = fmaxf(uni, EPS);
    const bool ex1 = p[0] <= t[0], ey1 = p[1] <= t[1], ex2 = p[2] >= t[2], ey2 = p[3] >= t[3];
    const float ew0 = (ex2 ? p[2] : t[2]) - (ex1 ? p[0] : t[0]);
    const float eh0 = (ey2 ? p[3] : t[3]) - (ey1 ? p[1] : t[1]);
    const float ew = fmaxf(ew0, 0.f), eh = fmaxf(eh0, 0.f);
    const float enc = ew * eh;
    const float ec = fmaxf(enc, EPS);
    const float dU = (uni > EPS ? -inter / (uc * uc) : 0.f) + 1.f / ec;
    const float dI = 1.f / uc - dU;
    const float dE = -(1.f / ec - (enc > EPS ? (enc - uni) / (ec * ec) : 0.f));
    const float giw = iw0 > 0.f ? dI * ih : 0.f, gih = ih0 > 0.f ? dI * iw : 0.f;
    const float gew = ew0 > 0.f ? dE * eh : 0.f, geh = eh0 > 0.f ? dE * ew : 0.f;
    const float s = -inv_total;  // L = mean(1 - G)
    d[0] = s * (-ah * dU - (lx ? giw : 0.f) - (ex1 ? gew : 0.f));
    d[1] = s * (-aw * dU - (ly ? gih : 0.f) - (ey1 ? geh : 0.f));
    d[2] = s * (ah * dU + (rx ? giw : 0.f) + (ex2 ? gew : 0.f));
    d[3] = s * (aw * dU + (ry ? gih : 0.f) + (ey2 ? geh : 0.f));
}

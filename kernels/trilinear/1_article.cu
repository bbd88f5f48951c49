// Step 1, the article's forward kernel as written (kwea123's pytorch-cppcuda-tutorial), with the
// PyTorch accessors replaced by plain pointers and size_t offsets (what the accessors compute).
//
// Launch: block (16,16); grid (ceil(N/16), ceil(F/16)). threadIdx.x picks the POINT n, threadIdx.y
// the feature f. A warp is 16 points x 2 features, so its 32 loads of feats[n][k][f] touch 16 rows
// 8F floats (8 KiB at F = 256) apart: 16 separate 32-byte sectors per load instruction for 128 useful
// bytes. That is the uncoalesced access the next step fixes.
//
// Kept as written: d = 1-a-b-c (equal to v*w up to rounding), no clamping of the points (a point
// outside [-1,1] extrapolates, unlike the lesson's own steps, which clamp). Limits: F <= 1048560
// (grid.y <= 65535 blocks of 16).
extern "C" __global__ void tri_fw_article(const float *__restrict__ feats, const float *__restrict__ points,
                                          float *__restrict__ feat_interp, int N, int F) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int f = blockIdx.y * blockDim.y + threadIdx.y;
    if (n >= N || f >= F) return;

    // point -1~1
    const float u = (points[(size_t)n * 3 + 0] + 1) / 2;
    const float v = (points[(size_t)n * 3 + 1] + 1) / 2;
    const float w = (points[(size_t)n * 3 + 2] + 1) / 2;

    const float a = (1 - v) * (1 - w);
    const float b = (1 - v) * w;
    const float c = v * (1 - w);
    const float d = 1 - a - b - c;
    const float *x = feats + (size_t)n * 8 * F + f;  // feats[n][k][f] = x[k * F]
    feat_interp[(size_t)n * F + f] = (1 - u) * (a * x[0 * (size_t)F] + b * x[1 * (size_t)F] + c * x[2 * (size_t)F] + d * x[3 * (size_t)F]) +
                                     u * (a * x[4 * (size_t)F] + b * x[5 * (size_t)F] + c * x[6 * (size_t)F] + d * x[7 * (size_t)F]);
}

// Step 2, grid-stride loop: a fixed grid (a few waves of blocks per SM) walks the whole array, each
// thread stepping by the total number of threads. What changed: the grid no longer grows with n, so
// any n fits (no grid-size limit, no per-element block scheduling), and index arithmetic is in
// 64-bit so arrays past 2^31 elements work.
extern "C" __global__ void add_gridstride(const float *a, const float *b, float *c, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        c[i] = a[i] + b[i];
    }
}

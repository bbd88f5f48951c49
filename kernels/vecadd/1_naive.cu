// Step 1, naive: one thread per element. Thread i reads a[i] and b[i] and writes c[i]; the grid has
// ceil(n / blockDim) blocks and the last block's extra threads do nothing. Neighbouring threads touch
// neighbouring floats, so each warp's loads coalesce into 128-byte transactions: for an operation
// this simple, the naive kernel is already close to the memory bandwidth.
extern "C" __global__ void add_naive(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}

// The transpose of an operand that KernelBench stores the other way round (problems 16, 17 and 18:
// A.T, B.T; the nn.Linear weight of the level-2 GEMMs, W (out x in) for B = W^T): lesson 03's and
// lesson 08's products read A as M x K and B as K x N row-major, so a stored transpose is copied
// into that layout first, out = in^T. A 32 x 32 tile goes through shared memory (33 floats a row, so
// the column reads hit 32 different banks): the reads of in and the writes of out are both whole
// rows of 128 bytes. It costs one read and one write of the operand at about the copy bandwidth.
// Launch: grid (ceil(cols / 32), ceil(rows / 32)), block (32, 8); in is rows x cols, out cols x rows.
extern "C" __global__ void kb_transpose(const float *__restrict__ in, float *__restrict__ out, int rows, int cols) {
    __shared__ float tile[32][33];
    const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
    for (int j = threadIdx.y; j < 32; j += 8) {
        const int r = r0 + j, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[j][threadIdx.x] = in[(size_t)r * cols + c];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < 32; j += 8) {
        const int c = c0 + j, r = r0 + threadIdx.x; // out row c, column r
        if (c < cols && r < rows) out[(size_t)c * rows + r] = tile[threadIdx.x][j];
    }
}

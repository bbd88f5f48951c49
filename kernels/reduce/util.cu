// Not a step: a helper of the lesson's checks. The big shapes are checked against the float64
// reference on sampled rows; this kernel counts the non-finite values of the WHOLE output, so an
// element left unwritten (still NaN from the poisoning) anywhere fails the check too.
// Launch: any grid-stride grid, block 256; *count must be zero before the launch.
extern "C" __global__ void count_nonfinite_f32(const float *__restrict__ y, long long n, unsigned long long *count) {
    unsigned long long c = 0;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        c += !isfinite(y[i]);
    for (int o = 16; o > 0; o >>= 1) c += __shfl_xor_sync(0xffffffffu, c, o);
    if (threadIdx.x % 32 == 0 && c) atomicAdd(count, c);
}
// The same for 16-bit floats: exponent bits all ones is Inf or NaN (half: 0x7C00, bfloat16: 0x7F80).
extern "C" __global__ void count_nonfinite_16(const unsigned short *__restrict__ y, long long n, unsigned int expmask, unsigned long long *count) {
    unsigned long long c = 0;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        c += (y[i] & expmask) == expmask;
    for (int o = 16; o > 0; o >>= 1) c += __shfl_xor_sync(0xffffffffu, c, o);
    if (threadIdx.x % 32 == 0 && c) atomicAdd(count, c);
}

// Not a step: a WRONG kernel for the KernelBench section. It writes C = 0 whatever A and B are.
// torch.allclose(out, ref, atol=1e-2, rtol=1e-2) accepts it whenever every |ref| is under 1e-2
// (small inputs: A and B in [-0.01, 0.01) at K = 1024 give |C| of about 1e-3); a relative check,
// like the relative L2 error of the lesson's check, rejects it at any scale.
//
// Launch: block 256, grid-stride over M*N. Limits: none.
extern "C" __global__ void mm_zeros(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                                    int M, int N, int K) {
    const long long n = (long long)M * N;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        C[i] = 0.0f;
}

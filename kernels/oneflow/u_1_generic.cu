// Upsample step 1, generic nearest-neighbour upsampling (the way PyTorch's general kernel works,
// our code): any output size. Forward: one thread per OUTPUT element; its index is split into
// (nc, oh, ow) with divisions, then mapped back to the source pixel with a float scale,
// ih = min(floor(oh * H / OH), H - 1). Backward: one thread per INPUT-gradient element; it finds
// the window of output rows and columns that copied it (the inverse map, with ceilings) and sums
// the gradients there in float. Correct for every scale; the price is integer divisions and
// scattered index arithmetic per element, and in the forward four threads reading each input.
#include <cuda_fp16.h>

template <typename T> __device__ __forceinline__ float to_f(T v) { return (float)v; }
template <> __device__ __forceinline__ float to_f<__half>(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T from_f(float v) { return (T)v; }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }

// Source index of output index o for scale in/out (nearest, as PyTorch computes it).
__device__ __forceinline__ int nearest_src(int o, float scale, int in_size) {
    return min((int)floorf((float)o * scale), in_size - 1);
}

// First output index whose source is i (inverse of nearest_src).
__device__ __forceinline__ int nearest_first_dst(int i, float scale_out_over_in, int out_size) {
    return min((int)ceilf((float)i * scale_out_over_in), out_size);
}

template <typename T>
__device__ void up_fwd(const T *__restrict__ x, T *__restrict__ y, int nc, int h, int w, int oh, int ow) {
    const long long total = (long long)nc * oh * ow;
    const float sh = (float)h / oh, sw = (float)w / ow;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < total; o += stride) {
        const int ox = (int)(o % ow);
        const long long t = o / ow;
        const int oy = (int)(t % oh);
        const long long c = t / oh;
        const int iy = nearest_src(oy, sh, h), ix = nearest_src(ox, sw, w);
        y[o] = x[(c * h + iy) * w + ix];
    }
}

template <typename T>
__device__ void up_bwd(const T *__restrict__ dy, T *__restrict__ dx, int nc, int h, int w, int oh, int ow) {
    const long long total = (long long)nc * h * w;
    const float rh = (float)oh / h, rw = (float)ow / w;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const int ix = (int)(i % w);
        const long long t = i / w;
        const int iy = (int)(t % h);
        const long long c = t / h;
        const int y0 = nearest_first_dst(iy, rh, oh), y1 = nearest_first_dst(iy + 1, rh, oh);
        const int x0 = nearest_first_dst(ix, rw, ow), x1 = nearest_first_dst(ix + 1, rw, ow);
        float acc = 0.0f;
        for (int yy = y0; yy < y1; yy++)
            for (int xx = x0; xx < x1; xx++) acc += to_f(dy[(c * oh + yy) * ow + xx]);
        dx[i] = from_f<T>(acc);
    }
}

extern "C" __global__ void up_generic_fwd_f32(const float *x, float *y, int nc, int h, int w, int oh, int ow) { up_fwd<float>(x, y, nc, h, w, oh, ow); }
extern "C" __global__ void up_generic_fwd_f16(const __half *x, __half *y, int nc, int h, int w, int oh, int ow) { up_fwd<__half>(x, y, nc, h, w, oh, ow); }
extern "C" __global__ void up_generic_bwd_f32(const float *dy, float *dx, int nc, int h, int w, int oh, int ow) { up_bwd<float>(dy, dx, nc, h, w, oh, ow); }
extern "C" __global__ void up_generic_bwd_f16(const __half *dy, __half *dx, int nc, int h, int w, int oh, int ow) { up_bwd<__half>(dy, dx, nc, h, w, oh, ow); }

// Masked fill with scale: out[i] = mask[i] ? value : in[i] * scale over n floats, mask one
// byte an element (nonzero: filled), a grid-stride loop with a 64-bit index.
// Expert parameterization (hand-written): THREADS a block, VEC = 4: a step's elements as a
// float4 and a uchar4 (the float and byte pointers are 16- and 4-byte aligned, so the
// groups are; the last n % 4 go one at a time), ITEMS groups a thread a step (unrolled,
// each a block-width apart), STEPS grid strides a thread (the grid's size).
// Launch: grid = ceil(n / (THREADS * VEC * ITEMS * STEPS)), block = (THREADS).
// Defaults: the kernel as written (256 threads, one element, four strides a thread).

#ifndef THREADS
#define THREADS 256
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef STEPS
#define STEPS 4
#endif

static __device__ __forceinline__ float pick(unsigned char m, float x, float value,
                                             float scale)
{
    return m ? value : x * scale;
}

extern "C" __global__ void __launch_bounds__(THREADS)
masked_fill_scale(float *__restrict__ out, const float *__restrict__ in,
                  const unsigned char *__restrict__ mask, float value, float scale, size_t n)
{
#if VEC == 4
    const size_t groups = n / 4;
    const size_t stride = (size_t)gridDim.x * THREADS * ITEMS;
    const float4 *in4 = reinterpret_cast<const float4 *>(in);
    const uchar4 *mask4 = reinterpret_cast<const uchar4 *>(mask);
    float4 *out4 = reinterpret_cast<float4 *>(out);
    for (size_t g = (size_t)blockIdx.x * THREADS * ITEMS + threadIdx.x; g < groups;
         g += stride) {
        float4 x[ITEMS];
        uchar4 m[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const size_t j = g + (size_t)k * THREADS;
            if (j < groups) {
                x[k] = in4[j];
                m[k] = mask4[j];
            }
        }
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const size_t j = g + (size_t)k * THREADS;
            if (j < groups) {
                float4 r;
                r.x = pick(m[k].x, x[k].x, value, scale);
                r.y = pick(m[k].y, x[k].y, value, scale);
                r.z = pick(m[k].z, x[k].z, value, scale);
                r.w = pick(m[k].w, x[k].w, value, scale);
                out4[j] = r;
            }
        }
    }
    // the last n % 4 elements, one a thread of the first block
    if (blockIdx.x == 0 && threadIdx.x < n - groups * 4) {
        const size_t i = groups * 4 + threadIdx.x;
        out[i] = pick(mask[i], in[i], value, scale);
    }
#else
    const size_t stride = (size_t)gridDim.x * THREADS * ITEMS;
    for (size_t i = (size_t)blockIdx.x * THREADS * ITEMS + threadIdx.x; i < n; i += stride) {
        float x[ITEMS];
        unsigned char m[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const size_t j = i + (size_t)k * THREADS;
            if (j < n) {
                x[k] = in[j];
                m[k] = mask[j];
            }
        }
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const size_t j = i + (size_t)k * THREADS;
            if (j < n)
                out[j] = pick(m[k], x[k], value, scale);
        }
    }
#endif
}

// Row gather (index_select along the first dimension): out[i][:] = src[idx[i]][:] for int64
// row indices into a [nsrc, D] float table, zeros for an index outside [0, nsrc).
// Expert parameterization (hand-written): MAP = 0 keeps the flat walk as written (THREADS a
// block, ITEMS elements a thread a block width apart, VEC = 4 a float4 group of a row when
// D is a multiple of four: a division a group); MAP = 1 gives a block ITEMS whole output
// rows (each index read once, the row's columns strided by the block, VEC = 4 as float4
// when D is a multiple of four; the ITEMS rows' loads issued before their stores, no
// division).
// Launch: MAP = 0: grid = ceil(nidx * D / (THREADS * VEC * ITEMS)); MAP = 1: grid =
// ceil(nidx / ITEMS); block = (THREADS).
// Defaults: the kernel as written (flat, 256 threads, one element a thread).

#ifndef THREADS
#define THREADS 256
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef MAP
#define MAP 0
#endif

static __device__ __forceinline__ bool in_table(long long r, long long nsrc)
{
    return r >= 0 && r < nsrc;
}

extern "C" __global__ void __launch_bounds__(THREADS)
take_rows_i64(float *__restrict__ out, const float *__restrict__ src,
              const long long *__restrict__ idx, long long nsrc, int D, size_t total)
{
    const bool vec = (VEC == 4) && (D % 4 == 0);
#if MAP == 0
    if (vec) {
        // group g: four floats of row g / (D / 4)
        const size_t dq = (size_t)(D / 4), groups = total / 4;
        const size_t g0 = (size_t)blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
        float4 v[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const size_t g = g0 + (size_t)k * THREADS;
            if (g < groups) {
                const size_t i = g / dq;
                const long long r = idx[i];
                v[k] = in_table(r, nsrc)
                           ? reinterpret_cast<const float4 *>(src)[(size_t)r * dq + (g - i * dq)]
                           : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
        }
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const size_t g = g0 + (size_t)k * THREADS;
            if (g < groups)
                reinterpret_cast<float4 *>(out)[g] = v[k];
        }
        return;
    }
    // element by element (VEC = 1, or D not a multiple of four: the grid then has a
    // quarter of the threads needed, so each thread walks its elements by grid strides)
    const size_t stride = (size_t)gridDim.x * THREADS * ITEMS;
    for (size_t t0 = (size_t)blockIdx.x * (THREADS * ITEMS) + threadIdx.x; t0 < total;
         t0 += stride) {
        float v[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const size_t t = t0 + (size_t)k * THREADS;
            if (t < total) {
                const size_t i = t / D;
                const long long r = idx[i];
                v[k] = in_table(r, nsrc) ? src[(size_t)r * D + (t - i * D)] : 0.0f;
            }
        }
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const size_t t = t0 + (size_t)k * THREADS;
            if (t < total)
                out[t] = v[k];
        }
    }
#else
    const size_t nidx = total / D;
    const size_t i0 = (size_t)blockIdx.x * ITEMS;
    long long r[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k)
        r[k] = (i0 + k < nidx) ? idx[i0 + k] : -1;
    if (vec) {
        const int dq = D / 4;
        for (int c = threadIdx.x; c < dq; c += THREADS) {
            float4 v[ITEMS];
#pragma unroll
            for (int k = 0; k < ITEMS; ++k)
                v[k] = in_table(r[k], nsrc)
                           ? reinterpret_cast<const float4 *>(src)[(size_t)r[k] * dq + c]
                           : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
            for (int k = 0; k < ITEMS; ++k)
                if (i0 + k < nidx)
                    reinterpret_cast<float4 *>(out)[(i0 + k) * dq + c] = v[k];
        }
    } else {
        for (int c = threadIdx.x; c < D; c += THREADS) {
            float v[ITEMS];
#pragma unroll
            for (int k = 0; k < ITEMS; ++k)
                v[k] = in_table(r[k], nsrc) ? src[(size_t)r[k] * D + c] : 0.0f;
#pragma unroll
            for (int k = 0; k < ITEMS; ++k)
                if (i0 + k < nidx)
                    out[(i0 + k) * D + c] = v[k];
        }
    }
#endif
}

// Squared Euclidean distances from a float query to the rows of a half table X [rows][dim].
// Expert parameterization (hand-written): WARPS warps a block, each RPW consecutive rows
// (their loads interleaved in one pass over the columns: RPW independent sums); VEC
// halves a load where dim % VEC == 0 (VEC = 2: a __half2 and a float2 of the query;
// VEC = 4: 8 bytes of X as two __half2 and a float4; scalar loads otherwise, as
// written); UNROLL the unroll of the lanes' column loop; the lanes' sums meet by
// __shfl_down_sync halving and lane 0 writes, as written.
// Launch: grid = (ceil(rows / (WARPS RPW))), block = (32 WARPS).
// Defaults: the kernel as written (four warps, a row a warp, scalar loads).

#include <cuda_fp16.h>

#ifndef WARPS
#define WARPS 4
#endif
#ifndef RPW
#define RPW 1
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif

constexpr int kUnroll = UNROLL; // `#pragma unroll N` takes a constant expression

extern "C" __global__ void __launch_bounds__(32 * WARPS)
knn_dist_h16_warp(float *__restrict__ dist, const __half *__restrict__ X,
                  const float *__restrict__ q, int rows, int dim)
{
    const int lane = threadIdx.x & 31;
    const int row0 = (blockIdx.x * WARPS + (threadIdx.x >> 5)) * RPW;
    if (row0 >= rows)
        return; // the whole warp leaves together

    const __half *xr[RPW];
    float s[RPW];
#pragma unroll
    for (int r = 0; r < RPW; ++r) {
        // a row past the last reads the last row again and is not written
        xr[r] = X + (size_t)min(row0 + r, rows - 1) * dim;
        s[r] = 0.0f;
    }

#if VEC == 4
    if ((dim & 3) == 0) {
        const int groups = dim >> 2;
#pragma unroll (kUnroll)
        for (int gidx = lane; gidx < groups; gidx += 32) {
            const float4 qv = reinterpret_cast<const float4 *>(q)[gidx];
#pragma unroll
            for (int r = 0; r < RPW; ++r) {
                const __half2 *p = reinterpret_cast<const __half2 *>(xr[r]) + 2 * gidx;
                const __half2 h0 = p[0], h1 = p[1];
                const float d0 = __low2float(h0) - qv.x, d1 = __high2float(h0) - qv.y;
                const float d2 = __low2float(h1) - qv.z, d3 = __high2float(h1) - qv.w;
                s[r] += d0 * d0;
                s[r] += d1 * d1;
                s[r] += d2 * d2;
                s[r] += d3 * d3;
            }
        }
    } else
#elif VEC == 2
    if ((dim & 1) == 0) {
        const int groups = dim >> 1;
#pragma unroll (kUnroll)
        for (int gidx = lane; gidx < groups; gidx += 32) {
            const float2 qv = reinterpret_cast<const float2 *>(q)[gidx];
#pragma unroll
            for (int r = 0; r < RPW; ++r) {
                const __half2 h = reinterpret_cast<const __half2 *>(xr[r])[gidx];
                const float d0 = __low2float(h) - qv.x, d1 = __high2float(h) - qv.y;
                s[r] += d0 * d0;
                s[r] += d1 * d1;
            }
        }
    } else
#endif
    {
#pragma unroll (kUnroll)
        for (int j = lane; j < dim; j += 32) {
            const float qj = q[j];
#pragma unroll
            for (int r = 0; r < RPW; ++r) {
                const float d = __half2float(xr[r][j]) - qj;
                s[r] += d * d;
            }
        }
    }

#pragma unroll
    for (int r = 0; r < RPW; ++r) {
        float v = s[r];
#pragma unroll
        for (int off = 16; off > 0; off >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, off);
        if (lane == 0 && row0 + r < rows)
            dist[row0 + r] = v;
    }
}

// Running maximum along each row of a rows x cols row-major matrix:
// out[r][c] = max(in[r][0..c]).
// Expert parameterization (hand-written): WARPS warps a block, ROWS rows a warp (one after
// the other), VEC=4 four consecutive columns a lane through float4 (a chunk of 128 columns:
// each lane scans its four, the warp scans the lanes' maxima) where cols is a multiple of 4
// (rows then 16-byte aligned), else one column a lane as written.
// Launch: grid = ceil(rows / (WARPS * ROWS)), block = 32 * WARPS.
// Defaults: the kernel as written (eight warps, a row a warp, one column a lane).

#include <cooperative_groups.h>

namespace cg = cooperative_groups;

#ifndef WARPS
#define WARPS 8
#endif
#ifndef ROWS
#define ROWS 1
#endif
#ifndef VEC
#define VEC 1
#endif

template <class Tile>
static __device__ __forceinline__ float warp_incl_max(const Tile &warp, float v)
{
    const int lane = warp.thread_rank();
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const float up = warp.shfl_up(v, d);
        if (lane >= d)
            v = fmaxf(v, up);
    }
    return v;
}

template <class Tile>
static __device__ __forceinline__ void row_scalar(const Tile &warp, float *__restrict__ dst,
                                                  const float *__restrict__ src, int cols)
{
    const int lane = warp.thread_rank();
    float carry = -INFINITY;
    for (int base = 0; base < cols; base += 32) {
        const int c = base + lane;
        float v = c < cols ? src[c] : -INFINITY;
        v = fmaxf(warp_incl_max(warp, v), carry);
        if (c < cols)
            dst[c] = v;
        carry = warp.shfl(v, 31);
    }
}

#if VEC == 4
template <class Tile>
static __device__ __forceinline__ void row_vec4(const Tile &warp, float *__restrict__ dst,
                                                const float *__restrict__ src, int cols)
{
    const int lane = warp.thread_rank();
    float carry = -INFINITY;
    for (int base = 0; base < cols; base += 128) {
        const int c = base + 4 * lane;
        float4 v = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
        if (c < cols)
            v = *reinterpret_cast<const float4 *>(src + c);
        v.y = fmaxf(v.x, v.y);
        v.z = fmaxf(v.y, v.z);
        v.w = fmaxf(v.z, v.w);
        const float incl = warp_incl_max(warp, v.w);
        float before = warp.shfl_up(incl, 1);
        if (lane == 0)
            before = -INFINITY;
        before = fmaxf(before, carry);
        if (c < cols)
            *reinterpret_cast<float4 *>(dst + c) = make_float4(
                fmaxf(before, v.x), fmaxf(before, v.y), fmaxf(before, v.z), fmaxf(before, v.w));
        carry = fmaxf(carry, warp.shfl(incl, 31));
    }
}
#endif

extern "C" __global__ void __launch_bounds__(32 * WARPS)
cummax_rows_cg(float *__restrict__ out, const float *__restrict__ in, int rows, int cols)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int first = (blockIdx.x * WARPS + warp.meta_group_rank()) * ROWS;
#pragma unroll
    for (int q = 0; q < ROWS; ++q) {
        const int row = first + q;
        if (row >= rows)
            return;
        const float *src = in + (size_t)row * cols;
        float *dst = out + (size_t)row * cols;
#if VEC == 4
        if (cols % 4 == 0) {
            row_vec4(warp, dst, src, cols);
            continue;
        }
#endif
        row_scalar(warp, dst, src, cols);
    }
}

// Running maximum along each row: out[r][c] = max(in[r][0..c]) for a rows x cols row-major
// matrix. One warp (a tiled partition of 32) a row walks it in chunks of 32 columns: an
// inclusive max-scan of the chunk through the tile's shfl_up, then the running carry from the
// chunk's last lane. Eight warps a block.
// Launch: grid = ((rows + 7) / 8), block = (256).

#include <cooperative_groups.h>

namespace cg = cooperative_groups;

#define WARPS_PER_BLOCK 8

extern "C" __global__ void cummax_rows_cg(float *out, const float *in, int rows, int cols)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);

    const int row = blockIdx.x * WARPS_PER_BLOCK + warp.meta_group_rank();
    if (row >= rows)
        return;
    const int lane = warp.thread_rank();
    const float *src = in + (size_t)row * cols;
    float *dst = out + (size_t)row * cols;

    float carry = -INFINITY;
    for (int base = 0; base < cols; base += 32) {
        const int c = base + lane;
        float v = c < cols ? src[c] : -INFINITY;
        for (int d = 1; d < 32; d <<= 1) {
            const float up = warp.shfl_up(v, d);
            if (lane >= d)
                v = fmaxf(v, up);
        }
        v = fmaxf(v, carry);
        if (c < cols)
            dst[c] = v;
        carry = warp.shfl(v, 31);
    }
}

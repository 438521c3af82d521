/* For each row of x: the columns of its first 16 entries above 0.95 (in order, -1 past the
   last) and how many entries are above it in all. A warp a row, 8 warps a block. This hand:
   C89 declarations first, macros for the warp and the keep, the row's pointer named, the
   chunks a do-while stepped by `base = base + WARP`, the vote counted by a loop of bits. */
#define WARP 32
#define KEEP 16
#define ALL 0xffffffffu

extern "C" __global__ void row_firsthits_warp(int *hits, int *count, const float *x, int rows,
                                              int cols)
{
    int lane, row, found, base, j, slot, hit;
    unsigned votes;

    lane = threadIdx.x % WARP;
    row = blockIdx.x * 8 + threadIdx.x / WARP;
    if (row < rows) {
        const float *rp = x + (size_t)row * cols;  /* at the block's head, as C89 has it */

        found = 0;
        base = 0;
        do {
            j = base + lane;
            hit = j < cols && rp[j] > 0.95f;
            votes = __ballot_sync(ALL, hit);
            slot = found + __popc(votes & ((1u << lane) - 1u));
            if (hit && slot < KEEP) hits[row * KEEP + slot] = j;
            found = found + __popc(votes);
            base = base + WARP;
        } while (base < cols);
        if (lane < KEEP && lane >= found) hits[row * KEEP + lane] = -1;
        if (lane == 0) count[row] = found;
    }
}

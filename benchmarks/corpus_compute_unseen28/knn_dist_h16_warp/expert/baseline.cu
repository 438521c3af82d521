// Squared Euclidean distance from one float query to every row of a half-precision
// embedding table (the scan step of a brute-force nearest-neighbour search):
// dist[r] = sum over j of (float(X[r][j]) - q[j])^2, X [rows][dim] row-major. One warp a
// row in a 1-D block of 128 threads (four warps, four rows a block); the lanes stride the
// row 32 apart, the partial sums meet by __shfl_down_sync halving, lane 0 writes. A warp
// past the last row returns early (the whole warp leaves together).
// Launch: grid = ((rows + 3) / 4), block = (128).

#include <cuda_fp16.h>

#define WARP 32
#define ROWS_PER_BLOCK 4

extern "C" __global__ void knn_dist_h16_warp(float *dist, const __half *X, const float *q,
                                             int rows, int dim)
{
    const int lane = threadIdx.x % WARP;
    const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / WARP;
    if (row >= rows)
        return;

    const __half *xr = X + (size_t)row * dim;
    float s = 0.0f;
    for (int j = lane; j < dim; j += WARP) {
        const float d = __half2float(xr[j]) - q[j];
        s += d * d;
    }
    for (int off = WARP / 2; off > 0; off /= 2)
        s += __shfl_down_sync(0xffffffffu, s, off);
    if (lane == 0)
        dist[row] = s;
}

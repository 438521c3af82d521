// floyd_block_phase respelled: macros for the sizes, a guarded-load helper, size_t row
// offsets in a row pointer of the output, the pivot slices loaded by the helper, min().
#define SIDE 32
#define BIG (1 << 29)

__device__ __forceinline__ int at_or_big(const int* m, int r, int c, int n)
{
    return (r < n && c < n) ? m[(size_t)r * n + c] : BIG;
}

extern "C" __global__ void floyd_block_phase(int* __restrict__ out, const int* __restrict__ dist,
                                             int n, int kb)
{
    __shared__ int pivotCols[SIDE][SIDE];
    __shared__ int pivotRows[SIDE][SIDE];

    int row = blockIdx.y * SIDE + threadIdx.y;
    int col = blockIdx.x * SIDE + threadIdx.x;
    int k0 = kb * SIDE;
    int* dst = out + (size_t)row * n;
    int best = at_or_big(dist, row, col, n);
    if (blockIdx.y == kb || blockIdx.x == kb) {
        if (row < n && col < n) dst[col] = best;
        return;
    }
    pivotCols[threadIdx.y][threadIdx.x] = at_or_big(dist, row, k0 + threadIdx.x, n);
    pivotRows[threadIdx.y][threadIdx.x] = at_or_big(dist, k0 + threadIdx.y, col, n);
    __syncthreads();
    for (int k = 0; k < SIDE; k++)
        best = min(best, pivotCols[threadIdx.y][k] + pivotRows[k][threadIdx.x]);
    if (row < n && col < n) dst[col] = best;
}

/* Lower-triangular matrix times a dense matrix, B = L * A.
 * L: n x n (row-major, only k <= i read), A and B: n x m (row-major).
 * TILE x TILE shared tiles; the walk stops at the diagonal tile of the block's rows. */

#ifndef TILE
#define TILE 16
#endif

#define IDX(i, j, ld) ((i) * (ld) + (j))

extern "C" __global__ void trmm_lower_tiled(float *B, const float *L, const float *A, int n, int m)
{
    __shared__ float tileL[TILE][TILE];
    __shared__ float tileA[TILE][TILE];

    int i = blockIdx.y * TILE + threadIdx.y;
    int j = blockIdx.x * TILE + threadIdx.x;
    float value = 0.0f;

    int t = 0;
    while (t <= blockIdx.y) {
        int k0 = t * TILE;
        if (i < n && k0 + threadIdx.x <= i)
            tileL[threadIdx.y][threadIdx.x] = L[IDX(i, k0 + threadIdx.x, n)];
        else
            tileL[threadIdx.y][threadIdx.x] = 0.0f;
        if (k0 + threadIdx.y < n && j < m)
            tileA[threadIdx.y][threadIdx.x] = A[IDX(k0 + threadIdx.y, j, m)];
        else
            tileA[threadIdx.y][threadIdx.x] = 0.0f;
        __syncthreads();

        for (int k = 0; k < TILE; ++k)
            value += tileL[threadIdx.y][k] * tileA[k][threadIdx.x];
        __syncthreads();
        t++;
    }

    if (i < n && j < m)
        B[IDX(i, j, m)] = value;
}

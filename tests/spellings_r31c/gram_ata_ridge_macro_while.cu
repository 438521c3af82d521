/* Gram matrix with a ridge, C = A^T A / K + RIDGE I, another hand: #ifndef tile, an index
 * macro, a while over the tiles, unsigned thread indices, restrict pointers. */
#ifndef TILE
#define TILE 16
#endif
#define RIDGE 0.01f
#define A_AT(r, c) A[(r) * N + (c)]

extern "C" __global__ void gram_ata_ridge(float* __restrict__ C, const float* __restrict__ A,
                                          int K, int N)
{
    __shared__ float sa[TILE][TILE];
    __shared__ float sb[TILE][TILE];
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    int ntiles = (K + TILE - 1) / TILE;
    float acc = 0.0f;
    int t = 0;
    while (t < ntiles) {
        int kr = t * TILE + ty;
        int ca = blockIdx.y * TILE + tx;
        int cb = blockIdx.x * TILE + tx;
        sa[ty][tx] = (kr < K && ca < N) ? A_AT(kr, ca) : 0.0f;
        sb[ty][tx] = (kr < K && cb < N) ? A_AT(kr, cb) : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; k++)
            acc += sa[k][ty] * sb[k][tx];
        __syncthreads();
        t++;
    }
    if (row < N && col < N)
        C[row * N + col] = (row == col) ? acc / K + RIDGE : acc / K;
}

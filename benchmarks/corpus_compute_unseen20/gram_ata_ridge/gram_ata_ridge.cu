// Gram matrix with a ridge: C = (A^T A) / K + 0.01 I, where A is K x N (row-major, K
// samples of N features) and C is N x N (row-major).
// Shared-memory tiled, 16 x 16 tiles, one element of C per thread.
// Launch: grid = ((N + 15) / 16, (N + 15) / 16), block = (16, 16).

#define TILE_WIDTH 16
#define RIDGE 0.01f

extern "C" __global__ void gram_ata_ridge(float *C, float *A, int K, int N)
{
    __shared__ float As[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Bs[TILE_WIDTH][TILE_WIDTH];

    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row = blockIdx.y * TILE_WIDTH + threadIdx.y;
    int col = blockIdx.x * TILE_WIDTH + threadIdx.x;

    float sum = 0;
    int t;
    int k;
    for (t = 0; t < (K + TILE_WIDTH - 1) / TILE_WIDTH; t++) {
        // As[ty][tx] = A[t*16 + ty][blockIdx.y*16 + tx]  (row block of C)
        if (t * TILE_WIDTH + ty < K && blockIdx.y * TILE_WIDTH + tx < N)
            As[ty][tx] = A[(t * TILE_WIDTH + ty) * N + blockIdx.y * TILE_WIDTH + tx];
        else
            As[ty][tx] = 0;
        // Bs[ty][tx] = A[t*16 + ty][blockIdx.x*16 + tx]  (column block of C)
        if (t * TILE_WIDTH + ty < K && blockIdx.x * TILE_WIDTH + tx < N)
            Bs[ty][tx] = A[(t * TILE_WIDTH + ty) * N + blockIdx.x * TILE_WIDTH + tx];
        else
            Bs[ty][tx] = 0;
        __syncthreads();

        for (k = 0; k < TILE_WIDTH; k++) {
            sum += As[k][ty] * Bs[k][tx];
        }
        __syncthreads();
    }

    if (row < N && col < N) {
        if (row == col)
            C[row * N + col] = sum / K + RIDGE;
        else
            C[row * N + col] = sum / K;
    }
}

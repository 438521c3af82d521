// Triangular matrix product B = L A, L lower triangular (n x n, row-major; its strict upper
// triangle is not read: it may hold anything), A and B n x m (row-major):
//   B[i][j] = sum_{k <= i} L[i][k] A[k][j].
// Shared-memory tiled GEMM with TS x TS tiles of L and A; a block of output rows only needs
// the L tiles left of and on the diagonal, so the tile loop stops at the block's row tile
// (inclusive); inside the diagonal tile the entries above the diagonal are staged as zero.
// Launch: grid = ((m + 15) / 16, (n + 15) / 16), block = (16, 16).

#define TS 16

extern "C" __global__ void trmm_lower_tiled(float* B, const float* L, const float* A, int n, int m)
{
    __shared__ float Ls[TS][TS];
    __shared__ float As[TS][TS];

    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TS + ty;
    int col = blockIdx.x * TS + tx;

    float acc = 0.0f;
    int last_tile = blockIdx.y;  // the diagonal tile of this block's rows
    for (int t = 0; t <= last_tile; ++t) {
        int lc = t * TS + tx;  // column of L this thread stages
        int ar = t * TS + ty;  // row of A this thread stages
        Ls[ty][tx] = (row < n && lc <= row) ? L[row * n + lc] : 0.0f;
        As[ty][tx] = (ar < n && col < m) ? A[ar * m + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TS; ++k)
            acc += Ls[ty][k] * As[k][tx];
        __syncthreads();
    }
    if (row < n && col < m)
        B[row * m + col] = acc;
}

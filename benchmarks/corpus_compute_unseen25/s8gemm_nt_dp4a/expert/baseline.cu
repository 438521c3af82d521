// Int8 GEMM in the "NT" layout with the dp4a instruction: C[m][n] = sum_k A[m][k] * B[n][k]
// for signed 8-bit A [M, K] and B [N, K] (both row-major, K a multiple of 4) and a 32-bit
// C [M, N]. Rows are read as 32-bit words of four int8 values. A 16 x 16 block stages a
// 16-row, 16-word (64-byte) slice of A and of B in shared memory a step, and each thread
// adds one output's 16 word products with __dp4a.
// Launch: grid = ((N + 15) / 16, (M + 15) / 16), block = (16, 16).

constexpr int TILE = 16;    // outputs a block side
constexpr int KWORDS = 16;  // 32-bit words of K a step (the staging needs KWORDS == TILE)

extern "C" __global__ void s8gemm_nt_dp4a(int *C, const signed char *A, const signed char *B,
                                          int M, int N, int K)
{
    __shared__ int As[TILE][KWORDS];
    __shared__ int Bs[TILE][KWORDS];

    const int kw = K / 4;
    const int *A4 = reinterpret_cast<const int *>(A);
    const int *B4 = reinterpret_cast<const int *>(B);
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    int brow = blockIdx.x * TILE + ty;  // the row of B this thread stages
    int acc = 0;

    for (int k0 = 0; k0 < kw; k0 += KWORDS) {
        As[ty][tx] = (row < M && k0 + tx < kw) ? A4[row * kw + k0 + tx] : 0;
        Bs[ty][tx] = (brow < N && k0 + tx < kw) ? B4[brow * kw + k0 + tx] : 0;
        __syncthreads();
        for (int k = 0; k < KWORDS; ++k)
            acc = __dp4a(As[ty][k], Bs[tx][k], acc);
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = acc;
}

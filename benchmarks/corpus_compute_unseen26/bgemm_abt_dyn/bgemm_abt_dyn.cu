// Batched C[b] = A[b] * B[b]^T in float (attention-score layout: A [batch][M][K] and
// B [batch][N][K] both K-contiguous, C [batch][M][N]). A TILE x TILE block of threads
// computes a TILE x TILE tile of C, one output a thread, staging a TILE x TILE tile of A's
// rows and one of B's rows a step in dynamic shared memory (extern __shared__, each row
// padded by one float so the column walk of B's tile misses no bank). The tile size is a
// template parameter of the device body; the extern "C" entry instantiates TILE = 16.
// Launch: grid = ((N + 15) / 16, (M + 15) / 16, batch), block = (16, 16),
//         dynamic shared memory 2 * 16 * 17 floats = 2176 bytes.

template <int TILE>
__device__ void abt_tile_body(float *C, const float *A, const float *B, int M, int N, int K)
{
    extern __shared__ float smem[];
    float *sa = smem;                     // [TILE][TILE + 1]: TILE rows of A, a K step
    float *sb = smem + TILE * (TILE + 1); // [TILE][TILE + 1]: TILE rows of B, a K step

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;  // the C row this thread computes
    const int col = blockIdx.x * TILE + tx;  // the C column this thread computes
    const int brow = blockIdx.x * TILE + ty; // the B row this thread stages
    const size_t batch = blockIdx.z;
    A += batch * M * K;
    B += batch * N * K;
    C += batch * M * N;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        const int k = k0 + tx;
        sa[ty * (TILE + 1) + tx] = (row < M && k < K) ? A[(size_t)row * K + k] : 0.0f;
        sb[ty * (TILE + 1) + tx] = (brow < N && k < K) ? B[(size_t)brow * K + k] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TILE; ++kk)
            acc += sa[ty * (TILE + 1) + kk] * sb[tx * (TILE + 1) + kk];
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = acc;
}

extern "C" __global__ void bgemm_abt_dyn(float *C, const float *A, const float *B, int M, int N,
                                         int K)
{
    abt_tile_body<16>(C, A, B, M, N, K);
}

// Batched C[b] = A[b] * B[b]^T (A [batch][M][K], B [batch][N][K], C [batch][M][N]), respelled:
// a file-scope constexpr tile, a non-template __device__ body, the dynamic buffer carved by
// `&smem[..]` and the second part offset from the first, size_t row offsets, pointer
// arithmetic for the batch entry. Launch: grid = ((N + 15) / 16, (M + 15) / 16, batch),
// block = (16, 16), dynamic shared memory 2 * 16 * 17 floats.

constexpr int kTile = 16;
constexpr int kLd = kTile + 1; // a row of a tile, padded by one

__device__ void nt_product(float *out, const float *lhs, const float *rhs, int M, int N, int K)
{
    extern __shared__ float smem[];
    float *lhs_tile = &smem[0];
    float *rhs_tile = lhs_tile + kTile * kLd;

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int m = blockIdx.y * kTile + ty;
    const int n = blockIdx.x * kTile + tx;
    const int nload = blockIdx.x * kTile + ty;
    const float *a = lhs + (size_t)blockIdx.z * M * K;
    const float *b = rhs + (size_t)blockIdx.z * N * K;
    float *c = out + (size_t)blockIdx.z * M * N;

    float sum = 0.0f;
    for (int t = 0; t < K; t += kTile) {
        if (m < M && t + tx < K)
            lhs_tile[ty * kLd + tx] = a[(size_t)m * K + t + tx];
        else
            lhs_tile[ty * kLd + tx] = 0.0f;
        if (nload < N && t + tx < K)
            rhs_tile[ty * kLd + tx] = b[(size_t)nload * K + t + tx];
        else
            rhs_tile[ty * kLd + tx] = 0.0f;
        __syncthreads();
        for (int i = 0; i < kTile; ++i)
            sum += lhs_tile[ty * kLd + i] * rhs_tile[tx * kLd + i];
        __syncthreads();
    }
    if (m < M && n < N)
        c[(size_t)m * N + n] = sum;
}

extern "C" __global__ void bgemm_abt_dyn(float *C, const float *A, const float *B, int M, int N,
                                         int K)
{
    nt_product(C, A, B, M, N, K);
}
